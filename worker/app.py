"""The arq application: a plain ``WorkerSettings`` class (for ``arq worker.app.WorkerSettings``)
and :func:`run_worker` (for ``poolq worker``), both built from :class:`Settings`.

Models, engines and the Qdrant writer open in ``on_startup`` and close in ``on_shutdown``; jobs
stay thin. A heartbeat with engine statistics is written to Redis every few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any, ClassVar

from arq.connections import RedisSettings
from arq.constants import in_progress_key_prefix
from arq.worker import Worker, func
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.exceptions import WatchError

from worker import constants, metrics
from worker.job_guard import guarded
from worker.jobs import ingest, reindex
from worker.reaper import reaper_loop
from worker.runtime import Runtime
from worker.schedule import cron_jobs
from worker.search_service import SearchService
from worker.serialization import REJECTED_JOB, job_deserializer, rejected_payload, serialize
from worker.settings import Settings, load_settings

log = logging.getLogger("poolq.worker")
REINDEX_MAX_TRIES = 3


def redis_settings(url: str) -> RedisSettings:
    """From a ``redis://``, ``rediss://`` (TLS) or ``unix://`` URL, password included. Commands
    retry through a Redis restart (exponential backoff up to 2 s, about a minute in all), so a
    worker rides out a restart instead of exiting."""
    s = RedisSettings.from_dsn(url)
    s.retry_on_error = [RedisConnectionError, RedisTimeoutError, ConnectionRefusedError]
    s.retry = Retry(ExponentialBackoff(cap=2.0, base=0.1), retries=40)
    s.conn_retries = 30
    return s


async def _heartbeat_loop(ctx: dict[str, Any]) -> None:
    rt: Runtime = ctx["runtime"]
    key = constants.HEARTBEAT_KEY.format(worker_id=rt.worker_id)
    while True:
        with contextlib.suppress(Exception):  # Redis may be restarting: the next beat will do
            await ctx["redis"].set(key, serialize(rt.heartbeat()), ex=constants.HEARTBEAT_TTL_S)
        await metrics.refresh(ctx)  # queue depths (Redis reads here, never in the scrape thread)
        await asyncio.sleep(constants.HEARTBEAT_INTERVAL_S)


async def startup(ctx: dict[str, Any]) -> None:
    settings: Settings = ctx.get("settings") or load_settings()
    ctx["settings"] = settings
    rt = await Runtime.open(settings, writer=ctx.pop("writer", None))
    ctx["runtime"] = rt
    ctx["heartbeat_task"] = asyncio.create_task(_heartbeat_loop(ctx))
    ctx["reaper_task"] = asyncio.create_task(reaper_loop(ctx))
    rt.search_service = SearchService(settings.redis_url, rt.queries)
    rt.search_service.start()
    ctx["metrics"] = metrics.start(ctx)  # None unless settings.metrics_port is set
    log.info("worker %s ready: models %s", rt.worker_id, ", ".join(settings.profile.models))


async def shutdown(ctx: dict[str, Any]) -> None:
    metrics.stop(ctx)
    for name in ("heartbeat_task", "reaper_task"):
        task = ctx.pop(name, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    rt: Runtime | None = ctx.get("runtime")
    if rt is None:
        return
    if rt.search_service is not None:
        await rt.search_service.stop()
    with contextlib.suppress(Exception):
        key = constants.HEARTBEAT_KEY.format(worker_id=rt.worker_id)
        final = rt.heartbeat() | {"stopped": True}
        await ctx["redis"].set(key, serialize(final), ex=constants.HEARTBEAT_TTL_S * 20)
    await rt.close()


def worker_kwargs(settings: Settings) -> dict[str, Any]:
    return {
        "functions": [
            func(
                guarded(ingest, name=constants.INGEST_JOB, max_tries=settings.max_tries),
                name=constants.INGEST_JOB,
                max_tries=settings.max_tries,
            ),
            func(
                guarded(reindex, name=constants.REINDEX_JOB, max_tries=REINDEX_MAX_TRIES),
                name=constants.REINDEX_JOB,
                max_tries=REINDEX_MAX_TRIES,
                timeout=settings.reindex_timeout_s,
            ),
            func(
                guarded(rejected_payload, name=REJECTED_JOB, max_tries=1),
                name=REJECTED_JOB,
                max_tries=1,
            ),
        ],
        "cron_jobs": cron_jobs(
            settings.reindex, reindex, settings.reindex_timeout_s, settings.keep_result_s
        ),
        "queue_name": constants.INGEST_QUEUE,
        "redis_settings": redis_settings(settings.redis_url),
        "on_startup": startup,
        "on_shutdown": shutdown,
        "job_serializer": serialize,
        "job_deserializer": job_deserializer(settings.max_job_bytes),
        "max_jobs": settings.max_jobs,
        "job_timeout": settings.job_timeout_s,
        "keep_result": settings.keep_result_s,
        "max_tries": settings.max_tries,
        "poll_delay": 0.05,
        "health_check_interval": 10,
        # SIGTERM/SIGINT: stop taking jobs, let running ones finish for the grace period, then
        # cancel the rest, which arq puts back in the queue for another worker
        "job_completion_wait": settings.shutdown_grace_s,
        "log_results": False,  # results and arguments hold document text
        "ctx": {
            "settings": settings,
            "max_tries": {
                constants.INGEST_JOB: settings.max_tries,
                constants.REINDEX_JOB: REINDEX_MAX_TRIES,
            },
        },
    }


_REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, WatchError, ConnectionError, OSError)


class PoolqWorker(Worker):
    """arq's worker, made to ride out Redis outages: a Redis error in a poll iteration (a
    WATCH-ed check cannot be retried by the client) would end ``main()`` and the process; here
    it is logged and the next poll tries again. A job whose bookkeeping failed on Redis before
    or after it ran is handed back to the queue (its in-progress key dropped once Redis answers)
    instead of waiting out arq's job timeout; re-running it rewrites the same points."""

    async def _poll_iteration(self) -> None:
        try:
            await super()._poll_iteration()
        except _REDIS_DOWN as e:
            log.warning("redis unavailable while polling (%s); retrying", e)
            await asyncio.sleep(0.5)

    async def run_job(self, job_id: str, score: int) -> None:
        try:
            await super().run_job(job_id, score)
        except _REDIS_DOWN as e:
            log.warning("job %s: redis failed around it (%s); handing it back", job_id, e)
            for _ in range(120):
                try:
                    await self.pool.delete(in_progress_key_prefix + job_id)
                    return
                except _REDIS_DOWN:
                    await asyncio.sleep(1.0)


def run_worker(settings: Settings, *, burst: bool = False) -> None:
    worker = PoolqWorker(burst=burst, **worker_kwargs(settings))
    worker.ctx["arq_worker"] = worker  # for metrics: job outcomes per function
    worker.run()


class WorkerSettings:
    """For ``arq worker.app.WorkerSettings`` (settings from POOLQ_* environment variables)."""

    functions: ClassVar = worker_kwargs(Settings())["functions"]
    queue_name = constants.INGEST_QUEUE
    on_startup = startup
    on_shutdown = shutdown
    job_serializer = serialize
    job_deserializer = staticmethod(job_deserializer(Settings().max_job_bytes))
    max_jobs = 32
    poll_delay = 0.05
    redis_settings = redis_settings(os.environ.get("POOLQ_REDIS_URL", Settings().redis_url))
