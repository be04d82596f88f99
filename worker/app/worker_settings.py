"""The arq application: :func:`run_worker` (``poolq worker``) runs a
:class:`~poolq.worker.reliability.arq_overrides.PoolqWorker` with :func:`worker_kwargs` of
:class:`Settings` (config file, ``POOLQ_*`` variables, flags): the jobs, cron entries, max tries,
metrics and reaper. ``WorkerSettings`` (:func:`build_worker_settings`) holds the same arguments
for arq's tools, but ``arq poolq.worker.app.WorkerSettings`` builds arq's own ``Worker``, which
start-up refuses with a one-line error naming ``poolq worker`` (``arq_overrides.py``).

Models, engines and the Qdrant writer open in ``on_startup`` and close in ``on_shutdown``; jobs
stay thin. A heartbeat with engine statistics is written to Redis every few seconds.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from poolq.sinks.folder_lock import hold_folder
from poolq.sinks.store.errors import is_transient
from poolq.sinks.store.heap import keep_freed_memory
from poolq.wire import constants
from poolq.worker.app.jobs.ingest import ingest
from poolq.worker.app.jobs.reindex import reindex
from poolq.worker.app.shutdown_steps import (
    REINDEX_MAX_TRIES,
    arq_kwargs,
    final_heartbeat,
    start_bookkeeping,
    stop_tasks,
)
from poolq.worker.config.event_loop import event_loop_policy
from poolq.worker.config.schedule import cron_jobs
from poolq.worker.config.settings import Settings, load_settings
from poolq.worker.engine.execution.thread_names import thread_initializer
from poolq.worker.engine.process_options import process_options_set
from poolq.worker.observability import metrics
from poolq.worker.observability.job_outcomes import labelled
from poolq.worker.observability.series import SeriesWriter
from poolq.worker.reliability.arq_overrides import (
    NotAPoolqWorkerError,
    PoolqWorker,
    poolq_worker,
)
from poolq.worker.reliability.job_guard import guarded_function
from poolq.worker.runtime.search_service import SearchService
from poolq.worker.runtime.worker_runtime import Runtime

log = logging.getLogger("poolq.worker")


async def _metrics_loop(ctx: dict[str, Any]) -> None:
    while True:
        await metrics.refresh(ctx)  # queue depths (Redis reads here, never in the scrape thread)
        await asyncio.sleep(constants.HEARTBEAT_INTERVAL_S)


async def startup(ctx: dict[str, Any]) -> None:
    try:
        arq_worker = poolq_worker(ctx)
    except NotAPoolqWorkerError as e:  # arq's own CLI built arq's Worker: one line, no traceback
        raise SystemExit(f"error: {e}") from None
    settings: Settings = ctx.get("settings") or load_settings()
    ctx["settings"] = settings
    keep_freed_memory()  # upsert buffers reuse their pages (sinks/store/heap.py)
    # asyncio.to_thread's threads (chunking, ...) named for the OS, as the others are
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(
            thread_name_prefix="poolq-io", initializer=thread_initializer("poolq-io")
        )
    )
    if not settings.qdrant_url and "writer" not in ctx:
        # one worker per embedded folder, before any model loads (`poolq worker` took it
        # already, before connecting to Redis: this returns its lock)
        hold_folder(settings.qdrant_path)
    rt = await Runtime.open(settings, writer=ctx.pop("writer", None))
    await start_bookkeeping(ctx, rt, SeriesWriter())
    arq_worker.admission = rt.admission  # jobs are taken by capacity (admission.py)
    ctx["metrics_task"] = asyncio.create_task(_metrics_loop(ctx))
    rt.search_service = SearchService(settings.redis_url, rt.queries)
    rt.search_service.start()
    ctx["metrics"] = metrics.start(ctx)  # None unless settings.metrics_port is set
    # everything start-up built (models, tokenizers, modules: ~280k objects) lives as long as the
    # process: out of the cyclic collector's sight, each full collection scans only what jobs
    # allocate, not all of it (which stalled a thread mid-run: benchmarks/bench_host_path.py)
    gc.collect()
    gc.freeze()
    log.info("worker %s ready: models %s", rt.worker_id, ", ".join(settings.profile.models))


async def shutdown(ctx: dict[str, Any]) -> None:
    metrics.stop(ctx)
    await stop_tasks(ctx, "metrics_task")
    rt: Runtime | None = ctx.get("runtime")
    if rt is None:
        return
    if rt.search_service is not None:
        await rt.search_service.stop()
    await final_heartbeat(ctx, rt)
    await rt.close()


def worker_kwargs(settings: Settings) -> dict[str, Any]:
    ingest_job = guarded_function(
        ingest, name=constants.INGEST_JOB, max_tries=settings.max_tries, transient=is_transient
    )
    reindex_job = guarded_function(
        reindex,
        name=constants.REINDEX_JOB,
        max_tries=REINDEX_MAX_TRIES,
        transient=is_transient,
        timeout=settings.reindex_timeout_s,
    )
    jobs = [ingest_job, reindex_job]
    kwargs = arq_kwargs(
        settings, constants.INGEST_QUEUE, jobs, settings.max_jobs, startup, shutdown
    )
    # (guarded functions carry their name for metrics already: job_guard.py)
    kwargs["cron_jobs"] = cron_jobs(
        settings.reindex,
        labelled(reindex, constants.REINDEX_JOB),
        settings.reindex_timeout_s,
        settings.keep_result_s,
    )
    return kwargs


def run_worker(settings: Settings, *, burst: bool = False) -> None:
    """``poolq worker``: a :class:`PoolqWorker` with :func:`worker_kwargs`, on the event loop ``settings.event_loop`` chooses (``config/event_loop.py``)."""
    with (
        process_options_set(  # every model load of the worker follows them
            backend=settings.backend, auto_bf16=settings.auto_bf16, cache_dir=settings.cache_dir
        ),
        event_loop_policy(settings.event_loop) as loop,
    ):
        log.info("event loop: %s", loop)
        PoolqWorker(burst=burst, **worker_kwargs(settings)).run()


def build_worker_settings(settings: Settings | None = None) -> type:
    """A plain arq ``WorkerSettings`` class with every argument of :func:`worker_kwargs` (settings
    from ``POOLQ_CONFIG`` and ``POOLQ_*`` variables by default), for arq's tools; its
    ``on_startup`` refuses arq's own ``Worker`` (run ``poolq worker``)."""
    kwargs = worker_kwargs(settings or load_settings())
    return type("WorkerSettings", (), {"__doc__": build_worker_settings.__doc__, **kwargs})
