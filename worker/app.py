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
from arq.worker import Worker, func

from worker import constants, metrics
from worker.jobs import ingest, reindex
from worker.runtime import Runtime
from worker.schedule import cron_jobs
from worker.search_service import SearchService
from worker.serialization import deserialize as deserialize_job
from worker.serialization import serialize
from worker.settings import Settings, load_settings

log = logging.getLogger("poolq.worker")


def redis_settings(url: str) -> RedisSettings:
    return RedisSettings.from_dsn(url)


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
    rt = await Runtime.open(settings)
    ctx["runtime"] = rt
    ctx["heartbeat_task"] = asyncio.create_task(_heartbeat_loop(ctx))
    rt.search_service = SearchService(settings.redis_url, rt.queries)
    rt.search_service.start()
    ctx["metrics"] = metrics.start(ctx)  # None unless settings.metrics_port is set
    log.info("worker %s ready: models %s", rt.worker_id, ", ".join(settings.profile.models))


async def shutdown(ctx: dict[str, Any]) -> None:
    metrics.stop(ctx)
    task = ctx.pop("heartbeat_task", None)
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
            func(ingest, name=constants.INGEST_JOB, max_tries=settings.max_tries),
            func(
                reindex,
                name=constants.REINDEX_JOB,
                max_tries=3,
                timeout=settings.reindex_timeout_s,
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
        "job_deserializer": deserialize_job,
        "max_jobs": settings.max_jobs,
        "job_timeout": settings.job_timeout_s,
        "keep_result": settings.keep_result_s,
        "max_tries": settings.max_tries,
        "poll_delay": 0.05,
        "health_check_interval": 10,
        "ctx": {"settings": settings},
    }


def run_worker(settings: Settings, *, burst: bool = False) -> None:
    worker = Worker(burst=burst, **worker_kwargs(settings))
    worker.ctx["arq_worker"] = worker  # for metrics: job outcomes per function
    worker.run()


class WorkerSettings:
    """For ``arq worker.app.WorkerSettings`` (settings from POOLQ_* environment variables)."""

    functions: ClassVar = [
        func(ingest, name=constants.INGEST_JOB),
        func(reindex, name=constants.REINDEX_JOB, timeout=Settings().reindex_timeout_s),
    ]
    queue_name = constants.INGEST_QUEUE
    on_startup = startup
    on_shutdown = shutdown
    job_serializer = serialize
    job_deserializer = deserialize_job
    max_jobs = 32
    poll_delay = 0.05
    redis_settings = redis_settings(os.environ.get("POOLQ_REDIS_URL", Settings().redis_url))
