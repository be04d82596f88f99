""":class:`WorkerMetrics`: every series of one worker as a Prometheus ``Collector`` on a private
registry (series listed in ``metrics.py``). Observers are attached to every engine of the
runtime, one per lane, and to the Qdrant writer; ``collect`` runs in the scrape thread and only
reads: it never touches Redis."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from poolq.wire import constants
from poolq.worker.observability.histogram import SECONDS_BUCKETS, EngineMetrics, Histogram
from poolq.worker.observability.job_outcomes import JobOutcomes

if TYPE_CHECKING:
    from poolq.worker.engine.engine_api import EngineObserver
    from poolq.worker.reliability.arq_overrides import PoolqWorker
    from poolq.worker.runtime.worker_runtime import Runtime

log = logging.getLogger("poolq.metrics")

INGEST_LANE, QUERY_LANE = "ingest", "query"  # an engine's ingestion and query slots


class _Scheduler(Protocol):
    @property
    def max_batch_tokens(self) -> int: ...

    def backlog(self, *, queries: bool) -> tuple[int, int]: ...


class ObservedEngine(Protocol):
    """What is used of an ``AsyncEngine``."""

    @property
    def scheduler(self) -> _Scheduler: ...

    @property
    def query_batch_tokens(self) -> int: ...

    def set_observer(self, observer: EngineObserver | None, *, queries: bool = False) -> None: ...


class WorkerMetrics(Collector):
    """Every series of one worker. ``engines`` maps ``(model, lane)`` to its observer."""

    def __init__(self, runtime: Runtime | None = None) -> None:
        self.runtime = runtime
        self.engines: dict[tuple[str, str], EngineMetrics] = {}
        self._observed: dict[tuple[str, str], ObservedEngine] = {}
        self.write = Histogram(SECONDS_BUCKETS)
        self.jobs = JobOutcomes()
        self.queue_depth: dict[str, float] = {}
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        if runtime is not None:
            self.observe_engines(runtime.vectorizer.engines)
            runtime.writer.observer = self.write_observed

    def observe_engines(self, engines: Mapping[str, ObservedEngine]) -> None:
        """Observe each ``model -> engine``: its ingestion batches in the ``ingest`` lane, its
        query slot's in the ``query`` lane."""
        for model, engine in engines.items():
            for lane, queries, budget in (
                (INGEST_LANE, False, engine.scheduler.max_batch_tokens),
                (QUERY_LANE, True, engine.query_batch_tokens),
            ):
                em = EngineMetrics(budget)
                self.engines[(model, lane)] = em
                self._observed[(model, lane)] = engine
                engine.set_observer(em, queries=queries)

    def write_observed(self, seconds: float) -> None:
        self.write.observe(seconds)

    def job_ended(self, function: str, outcome: str) -> None:
        self.jobs.job_ended(function, outcome)

    def hook_arq(self, worker: PoolqWorker) -> None:
        """Count ``worker``'s job outcomes per function (see ``job_outcomes.py``)."""
        self.jobs.hook_arq(worker)

    def detach(self) -> None:
        """Stop every observation this attached (engines of both lanes, the writer)."""
        for (_, lane), engine in self._observed.items():
            engine.set_observer(None, queries=lane == QUERY_LANE)
        if self.runtime is not None:
            self.runtime.writer.observer = None

    def collect(self) -> Iterator[Metric]:
        jobs = CounterMetricFamily(
            "poolq_jobs", "Jobs ended, by function and outcome.", labels=["function", "outcome"]
        )
        for (function, outcome), n in sorted(self.jobs.snapshot().items()):
            jobs.add_metric([function, outcome], n)
        yield jobs

        depth = GaugeMetricFamily(
            "poolq_queue_depth",
            "Jobs waiting in the ingest queue and searches in the search queue (Redis).",
            labels=["queue"],
        )
        for queue, size in sorted(self.queue_depth.items()):
            depth.add_metric([queue], size)
        yield depth

        yield from self._engine_families()

        points = CounterMetricFamily("poolq_points_written", "Points upserted into Qdrant.")
        retries = CounterMetricFamily(
            "poolq_sink_retries", "Qdrant calls retried after a transient error."
        )
        searches = CounterMetricFamily(
            "poolq_searches", "Searches answered, by outcome.", labels=["outcome"]
        )
        if self.runtime is not None:
            points.add_metric([], self.runtime.writer.points_written)
            retries.add_metric([], self.runtime.writer.retries)
            queries = self.runtime.queries
            searches.add_metric(["ok"], queries.searches)
            searches.add_metric(["error"], queries.search_errors)
        yield points
        yield retries
        yield searches
        yield from self._int8_families()

    def _int8_families(self) -> Iterator[Metric]:
        """The int8 quality gate's figures per model (int8 models only), read at scrape time."""
        value = GaugeMetricFamily(
            "poolq_int8_quality",
            "int8 vs float32 on the calibration sample at load (cosines, top-k overlap, "
            "relative weight error), by model, task and figure.",
            labels=["model", "task", "figure"],
        )
        floor = GaugeMetricFamily(
            "poolq_int8_quality_floor",
            "The quality gate's floor (ceiling for *_weight_error) of each figure.",
            labels=["model", "task", "figure"],
        )
        if self.runtime is not None:
            for model, engine in sorted(self.runtime.vectorizer.engines.items()):
                report = engine.model.int8_report
                for c in report.checks if report is not None else ():
                    value.add_metric([model, c.task, c.figure], c.value)
                    floor.add_metric([model, c.task, c.figure], c.floor)
        yield value
        yield floor

    def _engine_families(self) -> Iterator[Metric]:
        tokens = HistogramMetricFamily(
            "poolq_batch_tokens", "Tokens per engine batch.", labels=["model", "lane"]
        )
        fill = HistogramMetricFamily(
            "poolq_batch_fill_ratio",
            "Tokens per engine batch over the engine's batch token budget.",
            labels=["model", "lane"],
        )
        stages = HistogramMetricFamily(
            "poolq_stage_seconds",
            "Seconds per stage: tokenize (per encode call), queue_wait (per text, admission to "
            "batch cut), forward and pool (per batch), write (per Qdrant upsert/delete call; "
            'model and lane "").',
            labels=["stage", "model", "lane"],
        )
        backlog_tokens = GaugeMetricFamily(
            "poolq_engine_backlog_tokens", "Tokens queued in the engine.", labels=["model", "lane"]
        )
        backlog_requests = GaugeMetricFamily(
            "poolq_engine_backlog_requests",
            "Texts queued in the engine.",
            labels=["model", "lane"],
        )
        for (model, lane), em in sorted(self.engines.items()):
            _add_histogram(tokens, [model, lane], em.batch_tokens)
            _add_histogram(fill, [model, lane], em.fill_ratio)
            for stage, h in em.stages():
                _add_histogram(stages, [stage, model, lane], h)
            if (engine := self._observed.get((model, lane))) is not None:
                queued, texts = engine.scheduler.backlog(queries=lane == QUERY_LANE)
                backlog_tokens.add_metric([model, lane], queued)
                backlog_requests.add_metric([model, lane], texts)
        _add_histogram(stages, ["write", "", ""], self.write)
        yield tokens
        yield fill
        yield stages
        yield backlog_tokens
        yield backlog_requests

    def serve(self, port: int, host: str = constants.DEFAULT_METRICS_HOST) -> None:
        """Serve /metrics on ``host:port`` (loopback by default: widen it on purpose)."""
        self._server, self._thread = start_http_server(port, host, registry=self.registry)
        log.info("metrics on http://%s:%d/metrics", host, port)

    def close(self) -> None:
        self.detach()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


def _add_histogram(family: HistogramMetricFamily, labels: list[str], h: Histogram) -> None:
    buckets, total = h.snapshot()
    family.add_metric(labels, buckets, total)
