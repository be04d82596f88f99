"""The worker's Prometheus endpoint: job outcomes counted on a real :class:`PoolqWorker` against
a real Redis (arq's own run_job, failures before a job runs included), and a real worker process
scraped before and after some jobs (every named series present, counters and histogram counts
moving, a failed job counted) and before and after a search (the query lane). The
collector alone, with fake observations, is in ``tests/observability``."""

import asyncio
import socket
import time
import urllib.request

import pytest
from arq import create_pool
from arq.worker import Retry, func
from prometheus_client.parser import text_string_to_metric_families

from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.wire.connection import redis_settings
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.observability.collector import WorkerMetrics
from poolq.worker.observability.job_outcomes import labelled
from poolq.worker.reliability.arq_overrides import PoolqWorker

STAGES = ("tokenize", "queue_wait", "forward", "pool", "write")
FAMILIES = (
    "poolq_jobs",
    "poolq_queue_depth",
    "poolq_batch_tokens",
    "poolq_batch_fill_ratio",
    "poolq_stage_seconds",
    "poolq_points_written",
    "poolq_engine_backlog_tokens",
    "poolq_engine_backlog_requests",
    "poolq_searches",
    "poolq_sink_retries",
    "poolq_int8_quality",
    "poolq_int8_quality_floor",
)
BACKLOG = "poolq_engine_backlog_tokens"


def parse(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted labels): value} of every sample."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def families(text: str) -> set[str]:
    return {f.name for f in text_string_to_metric_families(text)}


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples, name, **labels) -> float:
    """Sum over every sample of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


# Job outcomes on a real PoolqWorker -----------------------------------------------------------


async def _job(ctx, outcome="done"):
    if outcome == "failed":
        raise RuntimeError("boom")
    if outcome == "retried" or (outcome == "retried_once" and ctx["job_try"] == 1):
        raise Retry(defer=0.01)
    return outcome


def test_job_outcomes_follow_arq_counters_per_function(redis_server):
    """arq's run_job classifies, the on_job_end hook counts per function; jobs arq fails before
    they run (max tries exceeded, unknown function) reach the ``failed_unrun`` listener."""

    async def drive() -> tuple[WorkerMetrics, PoolqWorker]:
        settings = redis_settings(redis_server.url)
        pool = await create_pool(settings)
        for outcome in ("done", "done", "failed"):
            await pool.enqueue_job("ingest", outcome)
        await pool.enqueue_job("reindex:docs:0", "retried_once")  # retried, then done
        await pool.enqueue_job("other", "retried")  # retried, then max tries exceeded
        await pool.enqueue_job("nope")  # unknown function
        worker = PoolqWorker(
            functions=[
                func(labelled(_job, "ingest"), name="ingest"),
                func(labelled(_job, "reindex"), name="reindex:docs:0", max_tries=3),
                func(labelled(_job, "other"), name="other", max_tries=1),
            ],
            redis_pool=pool,
            burst=True,
            poll_delay=0.05,
            handle_signals=False,
        )
        m = WorkerMetrics()
        m.hook_arq(worker)
        try:
            await asyncio.wait_for(worker.main(), 60)
        finally:
            await worker.close()
        return m, worker

    m, worker = asyncio.run(drive())
    assert (worker.jobs_complete, worker.jobs_retried, worker.jobs_failed) == (3, 2, 3)
    assert m.jobs.snapshot() == {
        ("ingest", "done"): 2,
        ("ingest", "failed"): 1,
        ("ingest", "retried"): 0,
        ("reindex", "done"): 1,
        ("reindex", "failed"): 0,
        ("reindex", "retried"): 1,
        ("other", "retried"): 1,
        ("other", "failed"): 1,
        ("nope", "failed"): 1,
    }


# A real worker -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int, timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return r.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture(scope="module")
def metrics_worker(tmp_path_factory):
    """A real ``poolq worker --metrics-port`` (default profile) and its Redis: (url, port)."""
    from poolq.worker.dev.local_worker import WorkerProcess

    tmp = tmp_path_factory.mktemp("metrics")
    port = _free_port()
    with (
        LocalRedis(tmp / "redis") as server,
        WorkerProcess(server.url, tmp / "qdrant", "--metrics-port", str(port)),
    ):
        yield server.url, port


async def _ingest_and_fail(url: str, docs: list[dict]) -> tuple[list, str]:
    async with PoolqClient(url) as client:
        ids = await client.enqueue("metrics", docs, job_size=4)
        outcomes = await client.wait(ids, timeout_s=300)
        bad = await client.redis.enqueue_job("ingest", "metrics", "not a list")
        assert bad is not None
        status = (await client.wait([bad.job_id], timeout_s=60))[0].status
        return outcomes, status


@pytest.mark.slow
def test_metrics_endpoint_moves_with_jobs(metrics_worker):
    url, port = metrics_worker
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(passages(12))]
    before_text = scrape(port)
    before = parse(before_text)
    assert families(before_text) == set(FAMILIES)
    outcomes, bad_status = asyncio.run(_ingest_and_fail(url, docs))
    assert all(o.status == "done" for o in outcomes), [o.error for o in outcomes]
    assert bad_status == "failed"
    time.sleep(2.5)  # a heartbeat: queue depths refreshed
    after_text = scrape(port)
    after = parse(after_text)
    assert families(after_text) == set(FAMILIES)

    def moved(name, **labels):
        return total(after, name, **labels) - total(before, name, **labels)

    assert moved("poolq_jobs_total", function="ingest", outcome="done") == len(outcomes)
    assert moved("poolq_jobs_total", function="ingest", outcome="failed") == 1
    assert total(after, "poolq_jobs_total", outcome="retried") == 0
    assert moved("poolq_points_written_total") == sum(o.result.points for o in outcomes)
    for stage in STAGES:
        assert moved("poolq_stage_seconds_count", stage=stage) > 0, stage
        assert moved("poolq_stage_seconds_sum", stage=stage) > 0, stage
    for stage in STAGES[:-1]:  # ingestion runs in the ingest lane only
        assert moved("poolq_stage_seconds_count", stage=stage, lane="ingest") > 0, stage
        assert moved("poolq_stage_seconds_count", stage=stage, lane="query") == 0, stage
    assert moved("poolq_batch_tokens_count") > 0
    assert moved("poolq_batch_tokens_sum") > 0
    assert moved("poolq_batch_fill_ratio_count") == moved("poolq_batch_tokens_count")
    # each text waits once, per model: at least one queue wait per text sent
    assert moved("poolq_stage_seconds_count", stage="queue_wait") >= moved(
        "poolq_stage_seconds_count", stage="forward"
    )
    assert value(after, "poolq_queue_depth", queue="ingest") == 0
    assert value(after, "poolq_queue_depth", queue="search") == 0
    engines = {(dict(ls)["model"], dict(ls)["lane"]) for n, ls in after if n == BACKLOG}
    models = {model for model, _ in engines}
    assert models and "" not in models
    assert engines == {(m, lane) for m in models for lane in ("ingest", "query")}
    for model, lane in engines:
        assert value(after, BACKLOG, model=model, lane=lane) == 0
        assert value(after, "poolq_engine_backlog_requests", model=model, lane=lane) == 0
    assert ("poolq_sink_retries_total", ()) in after
    assert ("poolq_searches_total", (("outcome", "ok"),)) in after


@pytest.mark.slow
def test_queries_are_reported_in_the_query_lane(metrics_worker):
    """A search is encoded in the query lane (the engines' query slots): their batches and
    stages move the ``lane="query"`` series, and their backlog is reported."""
    url, port = metrics_worker
    collection = "metrics-search"

    async def ingest() -> None:
        docs = [{"id": f"s{i}", "text": t} for i, t in enumerate(passages(3))]
        async with PoolqClient(url) as client:
            outcomes = await client.wait(await client.enqueue(collection, docs), timeout_s=300)
            assert all(o.status == "done" for o in outcomes), [o.error for o in outcomes]

    async def search() -> int:
        async with PoolqClient(url) as client:
            return len((await client.search("how to read a file", collection, limit=3)).hits)

    asyncio.run(ingest())
    before = parse(scrape(port))
    assert asyncio.run(search()) > 0

    def moved(after, name, **labels):
        return total(after, name, **labels) - total(before, name, **labels)

    # the model thread records a batch right after handing back its results: poll a moment
    deadline = time.monotonic() + 10
    while True:
        after = parse(scrape(port))
        if moved(after, "poolq_stage_seconds_count", stage="pool", lane="query") > 0:
            break
        assert time.monotonic() < deadline, "no query-lane batch in the metrics"
        time.sleep(0.1)
    assert moved(after, "poolq_searches_total", outcome="ok") == 1
    for stage in STAGES[:-1]:
        assert moved(after, "poolq_stage_seconds_count", stage=stage, lane="query") > 0, stage
        assert moved(after, "poolq_stage_seconds_count", stage=stage, lane="ingest") == 0, stage
    assert moved(after, "poolq_batch_tokens_count", lane="query") > 0
    assert moved(after, "poolq_batch_tokens_sum", lane="query") > 0
    assert moved(after, "poolq_batch_fill_ratio_count", lane="query") == moved(
        after, "poolq_batch_tokens_count", lane="query"
    )
    assert moved(after, "poolq_batch_tokens_count", lane="ingest") == 0
    query_backlog = [
        dict(ls)["model"] for n, ls in after if n == BACKLOG and ("lane", "query") in ls
    ]
    assert query_backlog and all(
        value(after, BACKLOG, model=m, lane="query") == 0 for m in query_backlog
    )
