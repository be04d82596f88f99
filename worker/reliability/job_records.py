"""The writing side of the job index (``ingest/job_index.py`` reads it; its layout is told
there): how each job ended, which workers were seen, which collections a reindex ran on. Only
workers write it."""

from __future__ import annotations

import logging
import time
from typing import Any

from arq.jobs import deserialize_result

from poolq.wire import constants
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.errors import failure_of
from poolq.wire.records.outcome import JobOutcomeRecord, outcome_key
from poolq.wire.serialization import deserialize

DONE, FAILED = constants.JOB_INDEX_DONE_KEY, constants.JOB_INDEX_FAILED_KEY
# set in a job's ctx once the guard recorded how it ended (and, when it is done, unlisted it and
# released its lock in the same call): arq's after_job_end hook then has nothing to look up
# (``job_index_hooks.record_unguarded``)
OUTCOME_RECORDED = "poolq_outcome_recorded"
log = logging.getLogger("poolq.jobs")


def add_outcome(
    pipe: Any,
    job_id: str,
    *,
    success: bool,
    result: Any = None,
    error: str | None = None,
    code: ErrorCode | None = None,
    now: float | None = None,
    ttl_s: float = constants.JOB_INDEX_TTL_S,
) -> None:
    """Queue on ``pipe`` what :func:`record_outcome` writes (for pipelines of many jobs). A
    failure needs its ``code`` (:class:`~poolq.wire.records.record.WireError` without one)."""
    now = time.time() if now is None else now
    ttl = int(ttl_s) if ttl_s >= 1 else constants.JOB_INDEX_TTL_S  # keep_result 0: arq's default
    into, other = (DONE, FAILED) if success else (FAILED, DONE)
    pipe.zadd(into, {job_id: now})
    pipe.zrem(other, job_id)  # a job re-run after its worker died ends once, as it last ended
    for key in (DONE, FAILED):
        pipe.zremrangebyscore(key, "-inf", f"({now - ttl}")
    record = (
        JobOutcomeRecord("done", now, result=result)
        if success
        else JobOutcomeRecord("failed", now, error=error, code=code)
    )
    pipe.set(outcome_key(job_id), record.pack(), ex=ttl)


async def record_outcome(redis: Any, job_id: str, **outcome: Any) -> None:
    """Record how ``job_id`` ended (see :func:`add_outcome`), in one transaction."""
    async with redis.pipeline(transaction=True) as tr:
        add_outcome(tr, job_id, **outcome)
        await tr.execute()


async def worker_seen(redis: Any, worker_id: str, *, now: float | None = None) -> None:
    """Record that ``worker_id`` is alive now (its heartbeat is found, and its age known after
    its key expired); entries older than ``WORKER_LAST_SEEN_TTL_S`` are dropped."""
    now = time.time() if now is None else now
    key = constants.WORKER_LAST_SEEN_KEY
    async with redis.pipeline(transaction=False) as p:
        p.zadd(key, {worker_id: now})
        p.zremrangebyscore(key, "-inf", f"({now - constants.WORKER_LAST_SEEN_TTL_S}")
        await p.execute()


async def reindex_listed(redis: Any, collection: str, *, now: float | None = None) -> None:
    """List ``collection`` among those whose reindex progress ``poolq status`` reports."""
    now = time.time() if now is None else now
    key = constants.REINDEX_COLLECTIONS_KEY
    async with redis.pipeline(transaction=False) as p:
        p.zadd(key, {collection: now})
        p.zremrangebyscore(key, "-inf", f"({now - constants.REINDEX_PROGRESS_TTL_S}")
        await p.execute()


def arq_outcome(raw: bytes) -> tuple[bool, Any, str | None, ErrorCode | None]:
    """(success, result, error, code) of an arq result as stored (poolq's msgpack serializer);
    an unreadable one (not poolq's serializer) is an ``internal`` failure saying so."""
    try:
        info = deserialize_result(raw, deserializer=deserialize)
    except Exception as e:
        return False, None, f"unreadable result ({type(e).__name__})", ErrorCode.INTERNAL
    if info.success:
        return True, info.result, None, None
    err = failure_of(info.result)
    return False, None, err.text(), err.code


def result_ttl_s(ctx: dict[str, Any]) -> float:
    """How long the index keeps a job's outcome: the worker's ``keep_result_s``, as arq."""
    settings = ctx.get("settings")
    keep = getattr(settings, "keep_result_s", None)
    return float(keep) if isinstance(keep, int | float) and keep > 0 else constants.JOB_INDEX_TTL_S


async def record_best_effort(redis: Any, job_id: str, **outcome: Any) -> None:
    try:
        await record_outcome(redis, job_id, **outcome)
    except Exception as e:  # best effort: `poolq status JOB_ID` falls back on arq's result
        log.warning("job %s: could not record its outcome in the job index: %s", job_id, e)
