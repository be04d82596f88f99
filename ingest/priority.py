"""Job priority (part of :mod:`poolq.ingest.client`): which lane an enqueue call's jobs take,
and where they go in arq's queue.

arq starts jobs in score order (the score is a unix time in ms, the enqueue time unless
deferred). An interactive job is enqueued deferred *until* its enqueue time minus
:data:`~poolq.wire.constants.INTERACTIVE_HEAD_START_MS` (a time in the past: it is due
at once), so it scores ahead of every bulk job, first come first served among interactive ones.
arq derives a job's expiry from its deferral (``score - now + expires_extra_ms``), which a score
years in the past would make negative: interactive jobs carry an explicit ``_expires`` of
``expires_extra_ms``, the expiry every bulk job gets. Every ingest job also gets the keyword
argument ``priority`` ("interactive" or "bulk"): the lane its chunks take in the engines.
A job keeps its place through every later entry into the queue (a retry after a transient
failure, a dead-letter retry, the reaper's hand-back): :mod:`poolq.wire.placement` owns the
score arithmetic.
"""

from __future__ import annotations

from poolq.wire import constants
from poolq.wire.placement import ARQ_EXPIRES_EXTRA_MS, queue_placement

__all__ = ["ARQ_EXPIRES_EXTRA_MS", "check_priority", "job_priority", "queue_placement"]


def check_priority(priority: object, name: str) -> str:
    """``priority`` if it is one of ``auto``, ``interactive``, ``bulk``, else ``ValueError``
    naming ``name`` (the argument or flag it came from)."""
    if priority not in constants.PRIORITY_CHOICES:
        raise ValueError(
            f"{name}: expected one of {', '.join(constants.PRIORITY_CHOICES)}, got {priority!r}"
        )
    return str(priority)


def job_priority(priority: str, n_jobs: int) -> str:
    """The lane of the jobs of one enqueue call: "auto" is interactive for a call that makes one
    job, bulk for more."""
    if priority == "auto":
        return "interactive" if n_jobs == 1 else "bulk"
    return priority
