"""Prometheus metrics of one worker, on ``Settings.metrics_port`` (``--metrics-port``), listening
on ``Settings.metrics_host`` (``--metrics-host``; 127.0.0.1 unless widened): the worker's hooks
:func:`start`, :func:`refresh` and :func:`stop` (``worker/app/worker_settings.py``).

The engine, the runner and the Qdrant writer know nothing of Prometheus: they call an observer
(``AsyncEngine.set_observer``, ``QdrantWriter.observer``) with plain numbers where the work
happens (``histogram.py``), and read-only counters (points written, retries, searches, engine
backlog) are read at scrape time. :class:`~.collector.WorkerMetrics` adapts both into a private
``CollectorRegistry`` served by ``prometheus_client``'s HTTP server thread. The scrape thread
never touches Redis: queue depths are read by :func:`refresh`, which the heartbeat loop awaits
every couple of seconds.

Series (all prefixed ``poolq_``)::

    jobs_total{function, outcome="done|failed|retried"}      counter
    queue_depth{queue="ingest|search"}                        gauge
    batch_tokens{model, lane}                                 histogram
    batch_fill_ratio{model, lane}                             histogram (tokens / max_batch_tokens)
    stage_seconds{stage="tokenize|queue_wait|forward|pool|write", model, lane}   histogram
    points_written_total                                      counter
    engine_backlog_tokens{model, lane}, engine_backlog_requests{model, lane}   gauge
    searches_total{outcome="ok|error"}                        counter
    sink_retries_total                                        counter
    int8_quality{model, task, figure}, int8_quality_floor{...}   gauge (int8 models' gate)

``lane`` is ``ingest`` for a model's ingestion batches (interactive and bulk lanes) and
``query`` for its query lane (search queries, cut by the engine's query slot from the same
scheduler, in batches of their own budget); the ``write`` stage is the Qdrant writer's, with
``model`` and ``lane`` empty. Job outcomes are arq's own classification (``job_outcomes.py``).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from poolq.wire import constants
from poolq.worker.observability.collector import WorkerMetrics

log = logging.getLogger("poolq.metrics")


def start(ctx: dict[str, Any]) -> WorkerMetrics | None:
    """Serve metrics when ``settings.metrics_port`` is set; call after the runtime is open."""
    settings = ctx["settings"]
    if settings.metrics_port is None:
        return None
    metrics = WorkerMetrics(ctx["runtime"])
    if (worker := ctx.get("arq_worker")) is not None:
        metrics.hook_arq(worker)
    else:
        log.warning("metrics: no arq worker in ctx, poolq_jobs_total stays at zero")
    try:
        metrics.serve(settings.metrics_port, settings.metrics_host)
    except BaseException:
        metrics.detach()
        raise
    return metrics


async def refresh(ctx: dict[str, Any]) -> None:
    """Read queue depths from Redis (on the event loop, for the next scrapes)."""
    metrics: WorkerMetrics | None = ctx.get("metrics")
    if metrics is None:
        return
    with contextlib.suppress(Exception):  # Redis may be restarting: keep the last values
        async with ctx["redis"].pipeline(transaction=False) as pipe:
            pipe.zcard(constants.INGEST_QUEUE)
            pipe.llen(constants.SEARCH_QUEUE)
            ingest, search = await pipe.execute()
        metrics.queue_depth = {"ingest": float(ingest), "search": float(search)}


def stop(ctx: dict[str, Any]) -> None:
    metrics: WorkerMetrics | None = ctx.pop("metrics", None)
    if metrics is not None:
        metrics.close()
