"""Where a job goes in arq's queue by its priority: the one score arithmetic of every entry into
the queue (see :mod:`poolq.ingest.priority` for the policy).

arq starts due jobs (score <= now, in ms) in score order. Every entry goes through
:func:`score_ms`:

* first enqueue (the client, a parse job handing documents on) and a dead-letter retry:
  :func:`queue_placement`, arq ``enqueue_job`` keyword arguments;
* a retry after a transient failure (``worker/reliability/job_guard.py``): :func:`retry_defer_ms`,
  the ``defer`` of arq's ``Retry`` (arq re-scores the job to its now + defer);
* the reaper hands a dead worker's job back by dropping its in-progress mark: the job keeps the
  score it was placed with;
* a scheduled reindex is enqueued by arq's cron at its due time: the bulk score (reindex jobs
  have no priority and are bulk).

An interactive job scores :data:`~poolq.wire.constants.INTERACTIVE_HEAD_START_MS` before its
due time, so it is ahead of every bulk job. That score alone would make it due at once, so a
retried interactive job also waits out its backoff: :func:`due_ms` gives the time it may start,
which the worker checks before starting it (``arq_overrides.py``). A resting job stays at the
head of the queue, and arq reads at most ``queue_read_limit`` due ids a poll (by default
``max(5 * max_jobs, 100)``): more resting interactive jobs than that hold bulk jobs back until
they are due.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from poolq.wire import constants

# arq's default ArqRedis.expires_extra_ms: a job not started within a day expires
ARQ_EXPIRES_EXTRA_MS = 86_400_000
HEAD_START_MS = constants.INTERACTIVE_HEAD_START_MS


def score_ms(priority: object, now_ms: int, delay_ms: int = 0) -> int:
    """The queue score of a job of ``priority`` due ``delay_ms`` after ``now_ms``: its due time
    for bulk (anything but "interactive"), the due time less the head start for interactive."""
    due = now_ms + delay_ms
    return due - HEAD_START_MS if priority == "interactive" else due


def priority_of_score(score: float, now_ms: int) -> str:
    """The priority a job scored ``score`` was placed with: ``interactive`` when scored more
    than half a head start in the past (no bulk job waits years: arq expires it within a day),
    else ``bulk``. The worker reads a job's lane from its score, never from its record."""
    return "interactive" if int(score) < now_ms - HEAD_START_MS // 2 else "bulk"


def due_ms(score: float, now_ms: int) -> int:
    """When a job scored ``score`` may start: its score, or for an interactive one its score
    plus the head start."""
    score = int(score)
    return score + HEAD_START_MS if priority_of_score(score, now_ms) == "interactive" else score


def resting_scores(now_ms: int) -> tuple[str, str]:
    """The ZCOUNT bounds (both exclusive) of the interactive jobs resting out a retry's backoff
    at ``now_ms``: scored ahead of every bulk job yet not due (:func:`due_ms` > ``now_ms``).
    Status reports count them as deferred, not queued."""
    return f"({now_ms - HEAD_START_MS}", f"({now_ms - HEAD_START_MS // 2}"


def retry_defer_ms(priority: object, delay_ms: int, now_ms: int) -> int:
    """The ``defer`` (ms) of arq's ``Retry`` that re-scores a job of ``priority`` to
    :func:`score_ms` with ``delay_ms``: arq sets the score to its now + defer (``run_job`` adds
    ``defer + now - score`` to the score), negative for an interactive job. Never 0 (arq keeps
    the old score for a defer of 0)."""
    return score_ms(priority, now_ms, delay_ms) - now_ms or 1


def queue_placement(
    priority: str, now_s: float, expires_extra_ms: int = ARQ_EXPIRES_EXTRA_MS
) -> dict[str, Any]:
    """The arq ``enqueue_job`` keyword arguments that place a job of ``priority`` in the queue
    at :func:`score_ms`: none for bulk (arq scores a job by its enqueue time, the bulk score);
    for interactive a ``_defer_until`` of that score and an explicit ``_expires`` (arq derives
    the expiry from the deferral, which a score years in the past would make negative)."""
    if priority != "interactive":
        return {}
    score = score_ms(priority, round(now_s * 1000))
    return {
        "_defer_until": datetime.fromtimestamp(score / 1000, UTC),
        "_expires": timedelta(milliseconds=expires_extra_ms),
    }
