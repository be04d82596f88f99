"""The client's side of the dead-letter list (``poolq dlq retry|drop``): enqueue dead-lettered
jobs again, or forget them. Reading the list is :func:`poolq.wire.dead_letters.entries`;
workers add to it (``worker/reliability/dead_letter.py``).

A dead-lettered job also counts as failed in the job index (``ingest/job_index.py``); taking it
out of the list takes it out of the failed set in the same transaction: the one write to the
job index a client makes. Its outcome record stays, so ``poolq status JOB_ID`` still tells how
it ended.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from poolq.wire import constants
from poolq.wire.dead_letters import entries
from poolq.wire.placement import queue_placement
from poolq.wire.records.dead_letter import DeadLetter


async def _remove(redis: Redis, job_ids: Sequence[str]) -> None:
    """Out of the list, and no longer counted as failed."""
    async with redis.pipeline(transaction=True) as tr:
        tr.hdel(constants.DEAD_LETTER_KEY, *job_ids)
        tr.zrem(constants.JOB_INDEX_FAILED_KEY, *job_ids)
        await tr.execute()


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
    them from the list, each placed in the queue by its ``priority`` as a first enqueue is
    (``wire/placement.py``: an interactive job goes ahead of every bulk job). ``redis`` is an
    ``ArqRedis`` (it enqueues). Returns old id -> new id."""
    out: dict[str, str] = {}
    for e in await _select(redis, job_ids):
        new_id = f"{e.job_id.split('~retry-')[0]}~retry-{uuid.uuid4().hex[:8]}"
        queue = constants.FUNCTION_QUEUES.get(e.function, constants.INGEST_QUEUE)
        placement = queue_placement(
            str(e.kwargs.get("priority", "bulk")), time.time(), redis.expires_extra_ms
        )
        job = await redis.enqueue_job(
            e.function, *e.args, _job_id=new_id, _queue_name=queue, **placement, **e.kwargs
        )
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
