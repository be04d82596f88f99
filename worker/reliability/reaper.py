"""Handing back the jobs of dead workers, in seconds rather than after arq's job timeout.

arq marks a running job with an in-progress key that expires only after the job's timeout, so
the jobs of a worker killed with SIGKILL would wait minutes before another worker may run them.
Each worker lists its running jobs under ``WORKER_JOBS_KEY`` and refreshes its heartbeat every
``HEARTBEAT_INTERVAL_S``; every live worker checks, every ``REAP_INTERVAL_S``, for job lists
whose worker has no heartbeat any more (expired after ``HEARTBEAT_TTL_S``), and deletes those
jobs' in-progress keys: the jobs are still in the queue, so the next poll of any worker runs
them again. Re-running is safe: point ids are deterministic, so a re-run rewrites the same points.
Each pass also records the worker as seen (``WORKER_LAST_SEEN_KEY``, for ``poolq status``).

A worker is never taken for dead too early:

* a worker never reaps itself (its heartbeat comes from a thread of its own, ``heartbeat.py``,
  but a Redis restart can still drop it for a moment);
* the reaper hands back a worker's jobs only after it has seen that worker's heartbeat missing,
  without a break, for ``REAP_CONFIRM_S`` (a Redis restart drops every heartbeat at once, and
  live workers beat again within ``HEARTBEAT_INTERVAL_S``);
* a job whose run lock (``run_lock.py``) is still held is not handed back: some run of it is
  alive. And should a live run's job be handed back all the same, the next run waits for the
  lock instead of running the job a second time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from arq.constants import in_progress_key_prefix, job_key_prefix, retry_key_prefix

from poolq.wire import constants
from poolq.worker.reliability import dead_letter, job_records
from poolq.worker.reliability.reap_decisions import (
    ORPHAN_GRACE_S,
    Mark,
    WorkerJobs,
    confirmed_dead,
    dead_workers,
    last_try,
    orphaned_marks,
    worker_id_of,
)
from poolq.worker.reliability.run_lock import lock_key

log = logging.getLogger("poolq.reaper")


class WorkerDied(RuntimeError):
    pass


async def _dead_letter_if_last_try(
    redis: Any, job_id: str, worker_id: str, max_tries: Mapping[str, int]
) -> None:
    raw_try, raw_job = (
        await redis.get(retry_key_prefix + job_id),
        await redis.get(job_key_prefix + job_id),
    )
    job = last_try(raw_try, raw_job, max_tries)
    if job is not None:
        error = WorkerDied(f"worker {worker_id} died during the job's last try ({job.tries})")
        await dead_letter.record(
            redis, job_id, job.function, job.args, job.kwargs, error, job.tries
        )


async def _worker_lists(redis: Any) -> list[WorkerJobs]:
    """Every worker's job list and whether its heartbeat is there: one SCAN per
    ``SCAN_COUNT`` keys, then one pipelined round trip for all the lists."""
    keys = await _keys(redis, constants.WORKER_JOBS_PATTERN)
    if not keys:
        return []
    ids = [worker_id_of(k) for k in keys]
    async with redis.pipeline(transaction=False) as pipe:
        for worker_id, key in zip(ids, keys, strict=True):
            pipe.exists(constants.HEARTBEAT_KEY.format(worker_id=worker_id))
            pipe.smembers(key)
        replies = await pipe.execute()
    return [
        WorkerJobs(worker_id, bool(alive), frozenset(j.decode() for j in members))
        for worker_id, alive, members in zip(ids, replies[::2], replies[1::2], strict=True)
    ]


async def _marks(redis: Any, queue: str) -> list[Mark]:
    """Every in-progress mark: whether its job is queued and its time to live, for all of
    them in one pipelined round trip."""
    keys = await _keys(redis, in_progress_key_prefix + "*")
    if not keys:
        return []
    ids = [k[len(in_progress_key_prefix) :] for k in keys]
    async with redis.pipeline(transaction=False) as pipe:
        for job_id, key in zip(ids, keys, strict=True):
            pipe.zscore(queue, job_id)
            pipe.pttl(key)
        replies = await pipe.execute()
    return [
        Mark(job_id, score is not None, int(ttl))
        for job_id, score, ttl in zip(ids, replies[::2], replies[1::2], strict=True)
    ]


async def _keys(redis: Any, match: str) -> list[str]:
    return [
        raw.decode() if isinstance(raw, bytes) else raw
        async for raw in redis.scan_iter(match=match, count=constants.SCAN_COUNT)
    ]


async def reap_dead_workers(
    redis: Any,
    max_tries: Mapping[str, int] | None = None,
    *,
    self_id: str | None = None,
    suspects: dict[str, float] | None = None,
) -> list[str]:
    """One pass; returns the ids of the jobs handed back. ``max_tries`` (function name ->
    tries) lets jobs that died on their last try go to the dead-letter list. ``self_id``: the
    reaping worker, never reaped. ``suspects``: kept across passes, so that a worker is reaped
    only once confirmed dead (:func:`confirmed_dead`); None: every worker without a heartbeat
    now (a one-off pass)."""
    handed_back: list[str] = []
    lists = await _worker_lists(redis)
    if suspects is None:
        dead = [w for w in dead_workers(lists) if w.worker_id != self_id]
    else:
        dead = confirmed_dead(lists, suspects, time.monotonic(), self_id=self_id)
    for worker in dead:
        job_ids = sorted(worker.jobs)
        for job_id in job_ids:
            if await redis.exists(lock_key(job_id)):
                log.info(
                    "job %s of worker %s: a run of it is alive; not handed back",
                    job_id,
                    worker.worker_id,
                )
                continue
            if await redis.delete(in_progress_key_prefix + job_id):
                handed_back.append(job_id)
                await _dead_letter_if_last_try(redis, job_id, worker.worker_id, max_tries or {})
        await redis.delete(constants.WORKER_JOBS_KEY.format(worker_id=worker.worker_id))
        if job_ids:
            log.warning(
                "worker %s has no heartbeat: handed back its %d running jobs %s",
                worker.worker_id,
                len(job_ids),
                job_ids,
            )
    return handed_back


async def reap_orphans(
    redis: Any,
    queue: str,
    in_progress_ttl_ms: int,
    max_tries: Mapping[str, int] | None = None,
    grace_s: float = ORPHAN_GRACE_S,
    running_here: frozenset[str] = frozenset(),
) -> list[str]:
    """Hand back queued jobs marked in progress that no live worker lists, once the mark is
    older than ``grace_s``: a worker killed between arq marking a job and the job registering
    itself leaves such a mark, which arq would keep for its longest job timeout (hours, with
    reindex jobs). Marks of finished jobs (kept by arq for unique cron jobs) are left alone."""
    lists = await _worker_lists(redis)
    marks = await _marks(redis, queue)
    handed_back = []
    for job_id in orphaned_marks(marks, lists, in_progress_ttl_ms, grace_s):
        if job_id in running_here or await redis.exists(lock_key(job_id)):
            continue  # a run of it is alive
        if await redis.delete(in_progress_key_prefix + job_id):
            handed_back.append(job_id)
            await _dead_letter_if_last_try(redis, job_id, "(unknown)", max_tries or {})
            log.warning("job %s was marked running by no live worker: handed back", job_id)
    return handed_back


async def reaper_loop(ctx: dict[str, Any]) -> None:
    suspects: dict[str, float] = {}  # worker id -> when first seen without a heartbeat
    while True:
        await asyncio.sleep(constants.REAP_INTERVAL_S)
        with contextlib.suppress(Exception):  # Redis restarting: the next pass will do
            rt = ctx.get("runtime")
            self_id = str(rt.worker_id) if rt is not None else None
            if self_id is not None:
                await job_records.worker_seen(ctx["redis"], self_id)
            await reap_dead_workers(
                ctx["redis"], ctx.get("max_tries"), self_id=self_id, suspects=suspects
            )
            arq_worker = ctx.get("arq_worker")
            if arq_worker is not None:
                running = frozenset(j for j, t in arq_worker.tasks.items() if not t.done())
                await reap_orphans(
                    ctx["redis"],
                    arq_worker.queue_name,
                    int(arq_worker.in_progress_timeout_s * 1000),
                    ctx.get("max_tries"),
                    running_here=running,
                )
