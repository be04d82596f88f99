"""Handing back the jobs of dead workers, in seconds rather than after arq's job timeout.

arq marks a running job with an in-progress key that expires only after the job's timeout, so
the jobs of a worker killed with SIGKILL would wait minutes before another worker may run them.
Each worker lists its running jobs under ``WORKER_JOBS_KEY`` and refreshes its heartbeat every
``HEARTBEAT_INTERVAL_S``; every live worker checks, every ``REAP_INTERVAL_S``, for job lists
whose worker has no heartbeat any more (expired after ``HEARTBEAT_TTL_S``), and deletes those
jobs' in-progress keys: the jobs are still in the queue, so the next poll of any worker runs
them again. Re-running is safe: point ids are deterministic, so a re-run rewrites the same points.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from arq.constants import in_progress_key_prefix, job_key_prefix, retry_key_prefix

from poolq.worker.reliability import dead_letter
from poolq.worker.wire import constants
from poolq.worker.wire.serialization import deserialize

log = logging.getLogger("poolq.reaper")
ORPHAN_GRACE_S = 30.0  # a running job registers itself within milliseconds of being marked


class WorkerDied(RuntimeError):
    pass


async def _dead_letter_if_last_try(
    redis: Any, job_id: str, worker_id: str, max_tries: dict[str, int]
) -> None:
    """A job whose last try died with its worker is failed by arq on its next pick ("max
    retries exceeded") without running: record it in the dead-letter list first."""
    raw_try, raw_job = (
        await redis.get(retry_key_prefix + job_id),
        await redis.get(job_key_prefix + job_id),
    )
    if raw_try is None or raw_job is None:
        return
    try:
        job = deserialize(raw_job)
        function, args, kwargs = job["f"], job["a"], job["k"]
        tries = int(raw_try)
    except Exception:
        return
    if function in max_tries and tries >= max_tries[function]:
        error = WorkerDied(f"worker {worker_id} died during the job's last try ({tries})")
        await dead_letter.record(redis, job_id, function, args, kwargs, error, tries)


async def reap_dead_workers(redis: Any, max_tries: dict[str, int] | None = None) -> list[str]:
    """One pass; returns the ids of the jobs handed back. ``max_tries`` (function name ->
    tries) lets jobs that died on their last try go to the dead-letter list."""
    handed_back: list[str] = []
    async for raw_key in redis.scan_iter(match=constants.WORKER_JOBS_PATTERN):
        key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
        worker_id = key[len(constants.KEY_PREFIX + "worker-jobs:") :]
        if await redis.exists(constants.HEARTBEAT_KEY.format(worker_id=worker_id)):
            continue
        job_ids = [j.decode() for j in await redis.smembers(key)]
        for job_id in job_ids:
            if await redis.delete(in_progress_key_prefix + job_id):
                handed_back.append(job_id)
                await _dead_letter_if_last_try(redis, job_id, worker_id, max_tries or {})
        await redis.delete(key)
        if job_ids:
            log.warning(
                "worker %s has no heartbeat: handed back its %d running jobs %s",
                worker_id,
                len(job_ids),
                job_ids,
            )
    return handed_back


async def reap_orphans(
    redis: Any,
    queue: str,
    in_progress_ttl_ms: int,
    max_tries: dict[str, int] | None = None,
    grace_s: float = ORPHAN_GRACE_S,
) -> list[str]:
    """Hand back queued jobs marked in progress that no live worker lists, once the mark is
    older than ``grace_s``: a worker killed between arq marking a job and the job registering
    itself leaves such a mark, which arq would keep for its longest job timeout (hours, with
    reindex jobs). Marks of finished jobs (kept by arq for unique cron jobs) are left alone."""
    live: set[str] = set()
    async for raw_key in redis.scan_iter(match=constants.WORKER_JOBS_PATTERN):
        key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
        worker_id = key[len(constants.KEY_PREFIX + "worker-jobs:") :]
        if await redis.exists(constants.HEARTBEAT_KEY.format(worker_id=worker_id)):
            live |= {j.decode() for j in await redis.smembers(key)}
    handed_back = []
    async for raw_key in redis.scan_iter(match=in_progress_key_prefix + "*"):
        key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
        job_id = key[len(in_progress_key_prefix) :]
        if job_id in live or await redis.zscore(queue, job_id) is None:
            continue
        ttl_ms = await redis.pttl(key)
        if ttl_ms <= 0 or in_progress_ttl_ms - ttl_ms < grace_s * 1000:
            continue
        if await redis.delete(key):
            handed_back.append(job_id)
            await _dead_letter_if_last_try(redis, job_id, "(unknown)", max_tries or {})
            log.warning("job %s was marked running by no live worker: handed back", job_id)
    return handed_back


async def reaper_loop(ctx: dict[str, Any]) -> None:
    while True:
        await asyncio.sleep(constants.REAP_INTERVAL_S)
        with contextlib.suppress(Exception):  # Redis restarting: the next pass will do
            await reap_dead_workers(ctx["redis"], ctx.get("max_tries"))
            arq_worker = ctx.get("arq_worker")
            if arq_worker is not None:
                await reap_orphans(
                    ctx["redis"],
                    arq_worker.queue_name,
                    int(arq_worker.in_progress_timeout_s * 1000),
                    ctx.get("max_tries"),
                )
