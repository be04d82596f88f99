"""The parse role's arq application: a worker on the parse queue with the one job ``parse``.

``poolq worker --role parse`` runs it alone (no torch, no models, no store: parsing scales on
plain CPU machines), and ``--role all`` runs it in a process beside the encode worker. It has the
encode worker's guarantees: the job guard (retries with backoff, dead letters, the job index,
one run at a time), the heartbeat from a thread of its own, and the reaper, which hands back the
running jobs of a parse worker that died.
"""

from __future__ import annotations

import logging
from typing import Any

from poolq.wire import constants
from poolq.worker.app.jobs.parse import parse
from poolq.worker.app.shutdown_steps import (
    arq_kwargs,
    final_heartbeat,
    start_bookkeeping,
    stop_tasks,
)
from poolq.worker.config.parse_settings import ParseSettings
from poolq.worker.reliability.arq_overrides import PoolqWorker
from poolq.worker.reliability.job_guard import guarded_function
from poolq.worker.runtime.parse_runtime import ParseRuntime

log = logging.getLogger("poolq.worker")


def ocr_state(mode: str) -> str:
    """What the start-up line says of OCR: the mode, or why it cannot run."""
    from poolq.worker.parse.ocr_engine import missing

    why = missing() if mode != "never" else None
    return f"{mode} (off: {why})" if why else mode


async def startup(ctx: dict[str, Any]) -> None:
    settings: ParseSettings = ctx["settings"]
    rt = ParseRuntime.open(settings)
    await start_bookkeeping(ctx, rt)
    log.info(
        "parse worker %s ready: %d parse processes, %gs and %d MB a file (or a page OCR'd); "
        "OCR %s", rt.worker_id, rt.reader.pool.workers, settings.parse_timeout_s,
        settings.parse_memory_mb, ocr_state(settings.ocr),
    )  # fmt: skip


async def shutdown(ctx: dict[str, Any]) -> None:
    await stop_tasks(ctx)
    rt: ParseRuntime | None = ctx.get("runtime")
    if rt is None:
        return
    await final_heartbeat(ctx, rt)
    await rt.close()


def parse_worker_kwargs(settings: ParseSettings) -> dict[str, Any]:
    parse_job = guarded_function(parse, name=constants.PARSE_JOB, max_tries=settings.max_tries)
    return arq_kwargs(
        settings, constants.PARSE_QUEUE, [parse_job], settings.parse_max_jobs, startup, shutdown
    )


def run_parse_worker(settings: ParseSettings, *, burst: bool = False) -> None:
    """``poolq worker --role parse``."""
    PoolqWorker(burst=burst, **parse_worker_kwargs(settings)).run()
