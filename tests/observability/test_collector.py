"""The Prometheus collector alone: fake observations exposed under the contract's names and
labels, and a stand-in runtime (plain classes with what WorkerMetrics reads of the real one)
whose query engines are observed in their own lane and detached with the rest."""

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from poolq.worker.engine.cpu.int8_quality import Check, QualityReport
from poolq.worker.observability.collector import WorkerMetrics
from poolq.worker.observability.histogram import EngineMetrics

FAMILIES = {
    "poolq_jobs": {"function", "outcome"},
    "poolq_queue_depth": {"queue"},
    "poolq_batch_tokens": {"model", "lane", "le"},
    "poolq_batch_fill_ratio": {"model", "lane", "le"},
    "poolq_stage_seconds": {"stage", "model", "lane", "le"},
    "poolq_points_written": set(),
    "poolq_engine_backlog_tokens": {"model", "lane"},
    "poolq_engine_backlog_requests": {"model", "lane"},
    "poolq_searches": {"outcome"},
    "poolq_sink_retries": set(),
    "poolq_int8_quality": {"model", "task", "figure"},
    "poolq_int8_quality_floor": {"model", "task", "figure"},
}


def scrape(m: WorkerMetrics) -> tuple[dict, dict[str, set[str]]]:
    """({(sample name, sorted labels): value}, {family: label names of its samples})."""
    samples, labels = {}, {}
    for family in text_string_to_metric_families(generate_latest(m.registry).decode()):
        labels[family.name] = set()
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
            labels[family.name] |= set(s.labels)
    return samples, labels


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def series(samples, name, **labels) -> list[dict[str, str]]:
    want = set(labels.items())
    return [dict(ls) for n, ls in samples if n == name and want <= set(ls)]


def test_fake_observations_under_the_contract_names():
    m = WorkerMetrics()
    em = EngineMetrics(max_batch_tokens=1000)
    m.engines[("mini", "ingest")] = em
    em.tokenized(0.002)
    em.batch(500, [0.01, 0.02, 0.3], forward_s=0.05, pool_s=0.001)
    em.batch(1000, [0.001], forward_s=0.07, pool_s=0.002)
    m.write_observed(0.004)
    m.job_ended("ingest", "done")
    m.job_ended("ingest", "failed")
    m.job_ended("reindex", "retried")
    m.queue_depth = {"ingest": 3.0, "search": 0.0}
    s, labels = scrape(m)
    assert set(labels) == set(FAMILIES)
    assert value(s, "poolq_jobs_total", function="ingest", outcome="done") == 1
    assert value(s, "poolq_jobs_total", function="ingest", outcome="failed") == 1
    assert value(s, "poolq_jobs_total", function="reindex", outcome="retried") == 1
    assert value(s, "poolq_jobs_total", function="reindex", outcome="done") == 0
    assert value(s, "poolq_queue_depth", queue="ingest") == 3
    mini = {"model": "mini", "lane": "ingest"}
    assert value(s, "poolq_batch_tokens_count", **mini) == 2
    assert value(s, "poolq_batch_tokens_sum", **mini) == 1500
    assert value(s, "poolq_batch_fill_ratio_bucket", **mini, le="0.5") == 1
    assert value(s, "poolq_batch_fill_ratio_bucket", **mini, le="1.0") == 2
    count = "poolq_stage_seconds_count"
    assert value(s, count, stage="tokenize", **mini) == 1
    assert value(s, count, stage="queue_wait", **mini) == 4  # one per text
    assert value(s, count, stage="forward", **mini) == 2
    assert value(s, count, stage="pool", **mini) == 2
    assert value(s, count, stage="write", model="", lane="") == 1
    assert value(s, "poolq_stage_seconds_sum", stage="forward", **mini) == pytest.approx(0.12)
    assert value(s, "poolq_stage_seconds_bucket", stage="queue_wait", **mini, le="0.01") == 2
    assert value(s, "poolq_stage_seconds_bucket", stage="queue_wait", **mini, le="+Inf") == 4


# A stand-in runtime: what WorkerMetrics reads of Runtime, Vectorizer, AsyncEngine, QdrantWriter
# and the query service.


class Scheduler:
    def __init__(self, max_batch_tokens: int) -> None:
        self.max_batch_tokens = max_batch_tokens
        self.queued = {False: (0, 0), True: (0, 0)}  # queries? -> (tokens, requests)

    def backlog(self, *, queries: bool) -> tuple[int, int]:
        return self.queued[queries]


class Model:
    def __init__(self, int8_report: QualityReport | None = None) -> None:
        self.int8_report = int8_report


class Engine:
    def __init__(self, max_batch_tokens: int, int8_report: QualityReport | None = None) -> None:
        self.scheduler = Scheduler(max_batch_tokens)
        self.query_batch_tokens = 1024  # engine.QUERY_BATCH_TOKENS
        self.observer = self.query_observer = None
        self.model = Model(int8_report)

    def set_observer(self, observer, *, queries: bool = False) -> None:
        if queries:
            self.query_observer = observer
        else:
            self.observer = observer


class Vectorizer:
    def __init__(self, engines: dict) -> None:
        self.engines = engines


class Writer:
    def __init__(self) -> None:
        self.observer = None
        self.points_written = 0
        self.retries = 0


class Queries:
    searches = 0
    search_errors = 0


class Runtime:
    def __init__(self, vectorizer: Vectorizer) -> None:
        self.vectorizer = vectorizer
        self.writer = Writer()
        self.queries = Queries()


# the splade model runs in int8: its gate's figures at load (one missed floor, to tell them apart)
SPLADE_GATE = QualityReport(
    42,
    [
        Check("sparse", "mean_topk_overlap", 0.968, 0.9),
        Check("sparse", "max_weight_error", 0.2, 0.15, higher_is_better=False),
    ],
)


def runtime(models=("dense", "splade")) -> Runtime:
    return Runtime(
        Vectorizer({m: Engine(2048, SPLADE_GATE if m == "splade" else None) for m in models})
    )


def test_queries_are_observed_in_their_own_lane():
    rt = runtime()
    m = WorkerMetrics(rt)
    dense = rt.vectorizer.engines["dense"]
    assert dense.query_observer is not None
    assert dense.query_observer is not dense.observer
    # what the engine's tokenizer pool and query slot report for one search
    dense.query_observer.tokenized(0.001)
    dense.query_observer.batch(12, [0.0004], forward_s=0.003, pool_s=0.0002)
    dense.scheduler.queued = {True: (9, 1), False: (700, 3)}
    rt.queries.searches = 1
    m.queue_depth = {"ingest": 0.0, "search": 0.0}
    s, labels = scrape(m)
    for family, names in FAMILIES.items():
        assert labels[family] == names, family
    query = {"model": "dense", "lane": "query"}
    ingest = {"model": "dense", "lane": "ingest"}
    assert value(s, "poolq_batch_tokens_count", **query) == 1
    assert value(s, "poolq_batch_tokens_sum", **query) == 12
    assert value(s, "poolq_batch_tokens_count", **ingest) == 0
    # the fill ratio is over the query slot's own budget: 12 / 1024
    assert value(s, "poolq_batch_fill_ratio_bucket", **query, le="0.1") == 1
    assert value(s, "poolq_batch_fill_ratio_sum", **query) == pytest.approx(12 / 1024)
    for stage in ("tokenize", "queue_wait", "forward", "pool"):
        assert value(s, "poolq_stage_seconds_count", stage=stage, **query) == 1, stage
        assert value(s, "poolq_stage_seconds_count", stage=stage, **ingest) == 0, stage
    assert value(s, "poolq_engine_backlog_tokens", **query) == 9
    assert value(s, "poolq_engine_backlog_requests", **query) == 1
    assert value(s, "poolq_engine_backlog_tokens", **ingest) == 700
    assert value(s, "poolq_searches_total", outcome="ok") == 1
    # every model in both lanes, each series once
    for name in ("poolq_batch_tokens_count", "poolq_engine_backlog_tokens"):
        got = sorted((x["model"], x["lane"]) for x in series(s, name))
        assert got == [(mo, la) for mo in ("dense", "splade") for la in ("ingest", "query")]


def test_detach_stops_observing_both_lanes_and_the_writer():
    rt = runtime()
    m = WorkerMetrics(rt)
    engines = list(rt.vectorizer.engines.values())
    assert all(e.observer is not None and e.query_observer is not None for e in engines)
    assert rt.writer.observer is not None
    m.close()  # detaches; no server was started
    assert all(e.observer is None and e.query_observer is None for e in engines)
    assert rt.writer.observer is None


def test_each_engine_is_observed_in_both_lanes_once():
    """One engine per model serves both lanes: two observers, one per lane, over their own
    batch budgets."""
    rt = runtime(models=("dense",))
    m = WorkerMetrics(rt)
    engine = rt.vectorizer.engines["dense"]
    assert set(m.engines) == {("dense", "ingest"), ("dense", "query")}
    assert engine.observer is m.engines[("dense", "ingest")]
    assert engine.query_observer is m.engines[("dense", "query")]


def test_int8_gate_figures_and_floors_per_model():
    s, _ = scrape(WorkerMetrics(runtime()))
    overlap = {"model": "splade", "task": "sparse", "figure": "mean_topk_overlap"}
    error = {"model": "splade", "task": "sparse", "figure": "max_weight_error"}
    assert value(s, "poolq_int8_quality", **overlap) == pytest.approx(0.968)
    assert value(s, "poolq_int8_quality_floor", **overlap) == pytest.approx(0.9)
    assert value(s, "poolq_int8_quality", **error) == pytest.approx(0.2)
    assert value(s, "poolq_int8_quality_floor", **error) == pytest.approx(0.15)
    # the fp32 model has no gate: no series
    assert series(s, "poolq_int8_quality", model="dense") == []
    assert len(series(s, "poolq_int8_quality")) == 2
