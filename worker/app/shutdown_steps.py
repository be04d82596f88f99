"""What both workers (the encode worker and the parse role) share: the arguments they give arq
(:func:`arq_kwargs`), the job bookkeeping their ``on_startup`` starts once the runtime is open
(:func:`start_bookkeeping`), and the steps their ``on_shutdown`` take, in this order: their
background tasks cancelled, the progress board's last tick written, and the final heartbeat
(``stopped``) sent before the runtime closes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from poolq.wire import constants
from poolq.wire.connection import redis_settings
from poolq.wire.serialization import REJECTED_JOB, job_deserializer, rejected_payload, serialize
from poolq.worker.observability.series import SeriesWriter
from poolq.worker.reliability.heartbeat import HeartbeatThread
from poolq.worker.reliability.job_guard import guarded_function
from poolq.worker.reliability.job_index_hooks import install_job_index
from poolq.worker.reliability.reaper import reaper_loop
from poolq.worker.reliability.run_lock import RunLocks
from poolq.worker.runtime.job_progress import ProgressBoard

REINDEX_MAX_TRIES = 3
# arq's own job timeout, past our ceiling (deadlines.py): ours fires first, with a message
ARQ_TIMEOUT_MARGIN_S = 60


def arq_kwargs(
    settings: Any,
    queue: str,
    functions: list[Any],
    max_jobs: int,
    startup: Callable[..., Any],
    shutdown: Callable[..., Any],
) -> dict[str, Any]:
    """A worker's arguments for arq (``settings``: its ``Settings`` or ``ParseSettings``):
    ``functions`` and the job that refuses a payload it cannot read, on ``queue``."""
    return {
        "functions": [
            *functions,
            guarded_function(rejected_payload, name=REJECTED_JOB, max_tries=1),
        ],
        "queue_name": queue,
        "redis_settings": redis_settings(settings.redis_url),
        "on_startup": startup,
        "on_shutdown": shutdown,
        "job_serializer": serialize,
        "job_deserializer": job_deserializer(settings.max_job_bytes),
        "max_jobs": max_jobs,
        # the ceiling is ours (deadlines.py, with the job's progress in its message); arq's
        # own timeout stays past it
        "job_timeout": settings.job_timeout_s + ARQ_TIMEOUT_MARGIN_S,
        "keep_result": settings.keep_result_s,
        "max_tries": settings.max_tries,
        "poll_delay": 0.05,
        "health_check_interval": 10,
        # SIGTERM/SIGINT: stop taking jobs, let running ones finish for the grace period, then
        # cancel the rest, which arq puts back in the queue for another worker
        "job_completion_wait": settings.shutdown_grace_s,
        "log_results": False,  # results and arguments hold document text and name files
        # every function's tries: the reaper also hands back the jobs of a dead worker of the
        # other role
        "ctx": {
            "settings": settings,
            "max_tries": {
                constants.INGEST_JOB: settings.max_tries,
                constants.REINDEX_JOB: REINDEX_MAX_TRIES,
                constants.PARSE_JOB: settings.max_tries,
            },
        },
    }


async def start_bookkeeping(
    ctx: dict[str, Any], rt: Any, series: SeriesWriter | None = None
) -> None:
    """``rt`` (the worker's open runtime) in ``ctx``, with the job index hooks, the heartbeat
    (``series``: the dashboard's time series it writes) and the reaper running."""
    rt.redis = ctx.get("redis")
    rt.run_locks = RunLocks(rt.worker_id)  # one run at a time per job (run_lock.py)
    ctx["runtime"] = rt
    # running jobs' progress between milestones, all in one pipeline a tick (job_progress.py)
    ctx["progress_board"] = ProgressBoard(rt.redis)
    await install_job_index(ctx)  # jobs arq fails unrun count as failed; the worker is listed
    # liveness from a thread of its own (heartbeat.py): a busy loop or core cannot starve it
    ctx["heartbeat"] = HeartbeatThread(
        ctx["settings"].redis_url, rt.worker_id, rt.heartbeat, rt.run_locks, series=series
    ).start()
    ctx["reaper_task"] = asyncio.create_task(reaper_loop(ctx))


async def stop_tasks(ctx: dict[str, Any], *names: str) -> None:
    """The background tasks ``names`` and the reaper cancelled, then the progress board's last
    tick written."""
    for name in (*names, "reaper_task"):
        task = ctx.pop(name, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    board: ProgressBoard | None = ctx.pop("progress_board", None)
    if board is not None:
        await board.close()


async def final_heartbeat(ctx: dict[str, Any], rt: Any) -> None:
    """The heartbeat thread stopped after one last beat saying the worker stopped cleanly."""
    heartbeat: HeartbeatThread | None = ctx.pop("heartbeat", None)
    if heartbeat is not None:
        await asyncio.to_thread(heartbeat.stop, replace(rt.heartbeat(), stopped=True))
