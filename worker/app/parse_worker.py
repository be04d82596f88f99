"""The parse role's arq application: a worker on the parse queue with the one job ``parse``.

``poolq worker --role parse`` runs it alone (no torch, no models, no store: parsing scales on
plain CPU machines), and ``--role all`` runs it in a process beside the encode worker. It has the
encode worker's guarantees: the job guard (retries with backoff, dead letters, the job index,
one run at a time), the heartbeat from a thread of its own, and the reaper, which hands back the
running jobs of a parse worker that died.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from poolq.wire import constants
from poolq.wire.connection import redis_settings
from poolq.wire.serialization import REJECTED_JOB, job_deserializer, rejected_payload, serialize
from poolq.worker.app.jobs.parse import parse
from poolq.worker.app.shutdown_steps import cancel_tasks, close_board, final_heartbeat
from poolq.worker.config.parse_settings import ParseSettings
from poolq.worker.reliability.arq_overrides import PoolqWorker
from poolq.worker.reliability.heartbeat import HeartbeatThread
from poolq.worker.reliability.job_guard import guarded_function
from poolq.worker.reliability.job_index_hooks import install_job_index
from poolq.worker.reliability.reaper import reaper_loop
from poolq.worker.reliability.run_lock import RunLocks
from poolq.worker.runtime.job_progress import ProgressBoard
from poolq.worker.runtime.parse_runtime import ParseRuntime

log = logging.getLogger("poolq.worker")


def ocr_state(mode: str) -> str:
    """What the start-up line says of OCR: the mode, or why it cannot run."""
    from poolq.worker.parse.ocr_engine import missing

    why = missing() if mode != "never" else None
    return f"{mode} (off: {why})" if why else mode


ARQ_TIMEOUT_MARGIN_S = 60
REINDEX_MAX_TRIES = 3  # (as the encode worker's: worker_settings.py, which imports torch)


async def startup(ctx: dict[str, Any]) -> None:
    settings: ParseSettings = ctx["settings"]
    rt = ParseRuntime.open(settings)
    rt.redis = ctx.get("redis")
    rt.run_locks = RunLocks(rt.worker_id)
    ctx["runtime"] = rt
    ctx["progress_board"] = ProgressBoard(rt.redis)
    await install_job_index(ctx)
    ctx["heartbeat"] = HeartbeatThread(
        settings.redis_url, rt.worker_id, rt.heartbeat, rt.run_locks
    ).start()
    ctx["reaper_task"] = asyncio.create_task(reaper_loop(ctx))
    log.info(
        "parse worker %s ready: %d parse processes, %gs and %d MB a file (or a page OCR'd); "
        "OCR %s", rt.worker_id, rt.reader.pool.workers, settings.parse_timeout_s,
        settings.parse_memory_mb, ocr_state(settings.ocr),
    )  # fmt: skip


async def shutdown(ctx: dict[str, Any]) -> None:
    await cancel_tasks(ctx, "reaper_task")
    await close_board(ctx)
    rt: ParseRuntime | None = ctx.get("runtime")
    if rt is None:
        return
    await final_heartbeat(ctx, rt)
    await rt.close()


def parse_worker_kwargs(settings: ParseSettings) -> dict[str, Any]:
    return {
        "functions": [
            guarded_function(parse, name=constants.PARSE_JOB, max_tries=settings.max_tries),
            guarded_function(rejected_payload, name=REJECTED_JOB, max_tries=1),
        ],
        "queue_name": constants.PARSE_QUEUE,
        "redis_settings": redis_settings(settings.redis_url),
        "on_startup": startup,
        "on_shutdown": shutdown,
        "job_serializer": serialize,
        "job_deserializer": job_deserializer(settings.max_job_bytes),
        "max_jobs": settings.parse_max_jobs,
        "job_timeout": settings.job_timeout_s + ARQ_TIMEOUT_MARGIN_S,
        "keep_result": settings.keep_result_s,
        "max_tries": settings.max_tries,
        "poll_delay": 0.05,
        "health_check_interval": 10,
        "job_completion_wait": settings.shutdown_grace_s,
        "log_results": False,  # results and arguments name files
        # every function's tries: the reaper also hands back the jobs of a dead encode worker
        "ctx": {
            "settings": settings,
            "max_tries": {
                constants.PARSE_JOB: settings.max_tries,
                constants.INGEST_JOB: settings.max_tries,
                constants.REINDEX_JOB: REINDEX_MAX_TRIES,
            },
        },
    }


def run_parse_worker(settings: ParseSettings, *, burst: bool = False) -> None:
    """``poolq worker --role parse``."""
    PoolqWorker(burst=burst, **parse_worker_kwargs(settings)).run()
