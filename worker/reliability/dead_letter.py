"""The dead-letter list: jobs that failed for good (their last try, or an error no retry can
fix), kept with their arguments and error so that ``poolq dlq list|retry|drop`` can act on them.

Stored as one Redis hash (``DEAD_LETTER_KEY``): job id -> msgpack
:class:`~poolq.wire.records.dead_letter.DeadLetter` ``{"job_id", "function", "args",
"kwargs", "error", "tries", "failed_at", "code"}``. A job is
dead-lettered and counted as failed in the job index (``ingest/job_index.py``) in one
transaction; dropping or retrying it takes it out of both.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from poolq.wire import constants
from poolq.wire.records.dead_letter import DeadLetter
from poolq.wire.records.errors import ErrorRecord
from poolq.worker.reliability import job_records


async def record(
    redis: Redis,
    job_id: str,
    function: str,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    error: BaseException,
    tries: int,
    *,
    ttl_s: float = constants.JOB_INDEX_TTL_S,
) -> None:
    """Dead-letter ``job_id`` and count it as failed (its outcome kept ``ttl_s``)."""
    err = ErrorRecord.of(error)
    entry = DeadLetter(
        job_id, function, list(args), dict(kwargs), err.text(), tries, time.time(), code=err.code
    )
    async with redis.pipeline(transaction=True) as tr:
        tr.hset(constants.DEAD_LETTER_KEY, job_id, entry.pack())  # type: ignore[arg-type]
        job_records.add_outcome(
            tr,
            job_id,
            success=False,
            error=entry.error,
            code=err.code,
            now=entry.failed_at,
            ttl_s=ttl_s,
        )
        await tr.execute()


async def _remove(redis: Redis, job_ids: Sequence[str]) -> None:
    """Out of the list, and no longer counted as failed."""
    async with redis.pipeline(transaction=True) as tr:
        tr.hdel(constants.DEAD_LETTER_KEY, *job_ids)
        job_records.add_forget_failed(tr, job_ids)
        await tr.execute()


async def entries(redis: Redis) -> list[DeadLetter]:
    """Every dead-lettered job, oldest first."""
    raw = await redis.hgetall(constants.DEAD_LETTER_KEY)  # type: ignore[misc]
    out = [DeadLetter.unpack(v) for v in raw.values()]
    return sorted(out, key=lambda e: e.failed_at)


async def _select(redis: Redis, job_ids: Sequence[str] | None) -> list[DeadLetter]:
    all_entries = await entries(redis)
    if job_ids is None:
        return all_entries
    by_id = {e.job_id: e for e in all_entries}
    missing = [j for j in job_ids if j not in by_id]
    if missing:
        raise KeyError(f"not in the dead-letter list: {', '.join(missing)}")
    return [by_id[j] for j in job_ids]


async def retry(redis: Any, job_ids: Sequence[str] | None = None) -> dict[str, str]:
    """Enqueue the selected jobs again (same function and arguments, new job ids) and remove
    them from the list. ``redis`` is an ``ArqRedis`` (it enqueues). Returns old id -> new id."""
    out: dict[str, str] = {}
    for e in await _select(redis, job_ids):
        new_id = f"{e.job_id.split('~retry-')[0]}~retry-{uuid.uuid4().hex[:8]}"
        job = await redis.enqueue_job(e.function, *e.args, _job_id=new_id, **e.kwargs)
        if job is None:  # pragma: no cover - only if the new id exists already
            raise RuntimeError(f"could not enqueue {new_id}")
        await _remove(redis, [e.job_id])  # the new job is counted from arq's queue
        out[e.job_id] = new_id
    return out


async def drop(redis: Redis, job_ids: Sequence[str] | None = None) -> list[str]:
    """Remove the selected jobs from the list for good; returns their ids."""
    selected = [e.job_id for e in await _select(redis, job_ids)]
    if selected:
        await _remove(redis, selected)
    return selected
