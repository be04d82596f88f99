"""Cancelling a job, as both sides write it: the flag a client sets (``JOB_CANCEL_KEY``), the
error a worker raises at a batch boundary once it sees the flag, and the outcome recorded for a
cancelled job (status ``cancelled`` in ``JOB_OUTCOME_KEY``, the job listed in
``JOB_INDEX_CANCELLED_KEY``). The client's side is ``ingest/job_cancel.py``; the worker's
checks are in ``worker/runtime/pipeline.py`` (before each part is written) and the job guard
(``worker/reliability/job_guard.py``: before a job starts; a cancelled job is neither retried
nor dead-lettered). Points written before the cancel are kept."""

from __future__ import annotations

from typing import Any

from poolq.wire import constants
from poolq.wire.records.outcome import JobOutcomeRecord, outcome_key

CANCELLED = constants.JOB_INDEX_CANCELLED_KEY


class JobCancelledError(Exception):
    """Raised in a job whose cancel flag is set (at a batch boundary, or before it started)."""


def cancel_key(job_id: str) -> str:
    return constants.JOB_CANCEL_KEY.format(job_id=job_id)


def add_cancelled(
    pipe: Any, job_id: str, *, now: float, note: str, ttl_s: float = constants.JOB_INDEX_TTL_S
) -> None:
    """Queue on ``pipe`` the record of a cancelled job: listed among the cancelled (trimmed to
    ``ttl_s``), out of the done and failed sets, its outcome ``cancelled`` with ``note``."""
    ttl = int(ttl_s) if ttl_s >= 1 else constants.JOB_INDEX_TTL_S
    pipe.zadd(CANCELLED, {job_id: now})
    pipe.zrem(constants.JOB_INDEX_DONE_KEY, job_id)
    pipe.zrem(constants.JOB_INDEX_FAILED_KEY, job_id)
    pipe.zremrangebyscore(CANCELLED, "-inf", f"({now - ttl}")
    pipe.set(outcome_key(job_id), JobOutcomeRecord("cancelled", now, error=note).pack(), ex=ttl)
