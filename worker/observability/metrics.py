"""Prometheus metrics of one worker, on ``Settings.metrics_port`` (``--metrics-port``).

The engine, the runner and the Qdrant writer know nothing of Prometheus: they call an observer
(``AsyncEngine.set_observer``, ``QdrantWriter.observer``) with plain numbers where the work
happens, and read-only counters (points written, retries, searches, engine backlog) are read at
scrape time. :class:`WorkerMetrics` adapts both into a private ``CollectorRegistry`` served by
``prometheus_client``'s HTTP server thread. The scrape thread never touches Redis: queue depths
are read by :func:`refresh`, which the heartbeat loop awaits every couple of seconds.

Series (all prefixed ``poolq_``)::

    jobs_total{function, outcome="done|failed|retried"}      counter
    queue_depth{queue="ingest|search"}                        gauge
    batch_tokens{model}                                       histogram
    batch_fill_ratio{model}                                   histogram (tokens / max_batch_tokens)
    stage_seconds{stage="tokenize|queue_wait|forward|pool|write", model}   histogram
    points_written_total                                      counter
    engine_backlog_tokens{model}, engine_backlog_requests{model}           gauge
    searches_total{outcome="ok|error"}                        counter
    sink_retries_total                                        counter

Job outcomes are arq's own classification (its ``jobs_complete/failed/retried`` counters, read in
an ``on_job_end`` hook where exactly one of them has just moved for the job that ended), with the
function name recorded by a thin wrapper around each job coroutine; jobs that fail before they
run (expired, max tries exceeded, unknown function) are counted from ``finish_failed_job``.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from poolq.worker.wire import constants

if TYPE_CHECKING:
    from poolq.worker.runtime.runtime import Runtime

log = logging.getLogger("poolq.metrics")

STAGES = ("tokenize", "queue_wait", "forward", "pool", "write")
JOB_OUTCOMES = ("done", "failed", "retried")
_FUNCTION_KEY = "_poolq_metrics_function"  # set in a job's ctx by the wrapper

SECONDS_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
TOKENS_BUCKETS = tuple(float(2**k) for k in range(4, 18))  # 16 .. 131072
FILL_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)


class Histogram:
    """A lock-guarded bucket array: ``observe_many`` takes the lock once for a batch of values
    (the model thread reports one queue wait per request of a batch)."""

    def __init__(self, buckets: Sequence[float]) -> None:
        self.bounds = tuple(buckets)
        self._counts = [0] * (len(self.bounds) + 1)  # the last: +Inf only
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        i = bisect.bisect_left(self.bounds, value)
        with self._lock:
            self._counts[i] += 1
            self._sum += value

    def observe_many(self, values: Iterable[float]) -> None:
        values = list(values)
        idx = [bisect.bisect_left(self.bounds, v) for v in values]
        with self._lock:
            for i in idx:
                self._counts[i] += 1
            self._sum += sum(values)

    def snapshot(self) -> tuple[list[tuple[str, float]], float]:
        """Cumulative ``(le, count)`` pairs ending with ``+Inf``, and the sum."""
        with self._lock:
            counts, total = list(self._counts), self._sum
        out: list[tuple[str, float]] = []
        acc = 0
        for bound, c in zip((*self.bounds, float("inf")), counts, strict=True):
            acc += c
            out.append(("+Inf" if bound == float("inf") else repr(bound), acc))
        return out, total

    @property
    def count(self) -> int:
        with self._lock:
            return sum(self._counts)


class EngineMetrics:
    """The observer of one model's engine (called from the tokenizer and model threads)."""

    def __init__(self, max_batch_tokens: int) -> None:
        self.max_batch_tokens = max_batch_tokens
        self.tokenize = Histogram(SECONDS_BUCKETS)
        self.queue_wait = Histogram(SECONDS_BUCKETS)
        self.forward = Histogram(SECONDS_BUCKETS)
        self.pool = Histogram(SECONDS_BUCKETS)
        self.batch_tokens = Histogram(TOKENS_BUCKETS)
        self.fill_ratio = Histogram(FILL_BUCKETS)

    def tokenized(self, seconds: float) -> None:
        self.tokenize.observe(seconds)

    def batch(
        self, tokens: int, queue_waits: Sequence[float], forward_s: float, pool_s: float
    ) -> None:
        self.batch_tokens.observe(tokens)
        self.fill_ratio.observe(tokens / self.max_batch_tokens)
        self.queue_wait.observe_many(queue_waits)
        self.forward.observe(forward_s)
        self.pool.observe(pool_s)

    def stages(self) -> Iterator[tuple[str, Histogram]]:
        yield "tokenize", self.tokenize
        yield "queue_wait", self.queue_wait
        yield "forward", self.forward
        yield "pool", self.pool


class WorkerMetrics(Collector):
    """Every series of one worker; ``collect`` runs in the scrape thread and only reads."""

    def __init__(self, runtime: Runtime | None = None) -> None:
        self.runtime = runtime
        self.engines: dict[str, EngineMetrics] = {}
        self.write = Histogram(SECONDS_BUCKETS)
        self.jobs: dict[tuple[str, str], int] = {
            (f, o): 0 for f in (constants.INGEST_JOB, constants.REINDEX_JOB) for o in JOB_OUTCOMES
        }
        self.queue_depth: dict[str, float] = {}
        self._jobs_lock = threading.Lock()
        self._arq_seen = (0, 0)  # arq's jobs_complete, jobs_retried at the last job end
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        if runtime is not None:
            for model, engine in runtime.vectorizer.engines.items():
                em = EngineMetrics(engine.scheduler.max_batch_tokens)
                self.engines[model] = em
                engine.set_observer(em)
            runtime.writer.observer = self.write_observed

    # Observations ----------------------------------------------------------------------------
    def write_observed(self, seconds: float) -> None:
        self.write.observe(seconds)

    def job_ended(self, function: str, outcome: str) -> None:
        with self._jobs_lock:
            self.jobs[(function, outcome)] = self.jobs.get((function, outcome), 0) + 1

    def detach(self) -> None:
        if self.runtime is None:
            return
        for engine in self.runtime.vectorizer.engines.values():
            engine.set_observer(None)
        self.runtime.writer.observer = None

    # arq hooks -------------------------------------------------------------------------------
    def hook_arq(self, worker: Any) -> None:
        """Count job outcomes as arq classifies them, per function."""
        for name, fn in worker.functions.items():
            fn.coroutine = _named(fn.coroutine, name.split(":", 1)[0])  # reindex:COLL:I: reindex
        self._arq_seen = (worker.jobs_complete, worker.jobs_retried)
        prev_end = worker.on_job_end

        async def on_job_end(ctx: dict[str, Any]) -> None:
            # arq bumps exactly one of its counters for this job, then awaits this hook with no
            # await in between: read them before awaiting anything.
            seen = (worker.jobs_complete, worker.jobs_retried)
            done, retried = (a - b for a, b in zip(seen, self._arq_seen, strict=True))
            self._arq_seen = seen
            outcome = "done" if done else "retried" if retried else "failed"
            self.job_ended(str(ctx.get(_FUNCTION_KEY, "unknown")), outcome)
            if prev_end is not None:
                await prev_end(ctx)

        worker.on_job_end = on_job_end
        deserializer = worker.job_deserializer
        # jobs arq fails without running them (PoolqWorker.finish_failed_job)
        worker.failed_unrun.append(
            lambda data: self.job_ended(_function_of(data, deserializer), "failed")
        )

    # Scrape ----------------------------------------------------------------------------------
    def collect(self) -> Iterator[Metric]:
        jobs = CounterMetricFamily(
            "poolq_jobs", "Jobs ended, by function and outcome.", labels=["function", "outcome"]
        )
        with self._jobs_lock:
            job_counts = sorted(self.jobs.items())
        for (function, outcome), n in job_counts:
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

        tokens = HistogramMetricFamily(
            "poolq_batch_tokens", "Tokens per engine batch.", labels=["model"]
        )
        fill = HistogramMetricFamily(
            "poolq_batch_fill_ratio",
            "Tokens per engine batch over the batch token budget.",
            labels=["model"],
        )
        stages = HistogramMetricFamily(
            "poolq_stage_seconds",
            "Seconds per stage: tokenize (per encode call), queue_wait (per text, admission to "
            "batch cut), forward and pool (per batch), write (per Qdrant upsert/delete call).",
            labels=["stage", "model"],
        )
        backlog_tokens = GaugeMetricFamily(
            "poolq_engine_backlog_tokens", "Tokens queued in the engine.", labels=["model"]
        )
        backlog_requests = GaugeMetricFamily(
            "poolq_engine_backlog_requests", "Texts queued in the engine.", labels=["model"]
        )
        engines = self.runtime.vectorizer.engines if self.runtime is not None else {}
        for model, em in sorted(self.engines.items()):
            _add_histogram(tokens, [model], em.batch_tokens)
            _add_histogram(fill, [model], em.fill_ratio)
            for stage, h in em.stages():
                _add_histogram(stages, [stage, model], h)
            if model in engines:
                sched = engines[model].scheduler
                backlog_tokens.add_metric([model], sched.queued_tokens)
                backlog_requests.add_metric([model], sched.queued_requests)
        _add_histogram(stages, ["write", ""], self.write)
        yield tokens
        yield fill
        yield stages
        yield backlog_tokens
        yield backlog_requests

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

    # Serving ---------------------------------------------------------------------------------
    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        self._server, self._thread = start_http_server(port, addr, registry=self.registry)
        log.info("metrics on http://%s:%d/metrics", addr, port)

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


def _named(coroutine: Callable[..., Awaitable[Any]], label: str) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(coroutine)
    async def run(ctx: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        ctx[_FUNCTION_KEY] = label
        return await coroutine(ctx, *args, **kwargs)

    return run


def _function_of(result_data: bytes | None, deserializer: Any) -> str:
    if not result_data:
        return "unknown"
    try:
        from arq.jobs import deserialize_result

        name = str(deserialize_result(result_data, deserializer=deserializer).function)
    except Exception:
        return "unknown"
    return name.split(":", 1)[0] if name and not name.startswith("<") else "unknown"


# The worker's hooks (worker/app.py) ----------------------------------------------------------
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
        metrics.serve(settings.metrics_port, settings.metrics_addr)
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
