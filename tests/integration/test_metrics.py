"""The worker's Prometheus endpoint: a real worker process scraped before and after some jobs
(every named series present, counters and histogram counts moving, a failed job counted), and
the adapter alone with fake observations."""

import asyncio
import socket
import time
import urllib.request

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.worker.observability.metrics import EngineMetrics, WorkerMetrics

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
)


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


# The adapter alone ---------------------------------------------------------------------------


def test_adapter_exposes_fake_observations():
    m = WorkerMetrics()
    em = EngineMetrics(max_batch_tokens=1000)
    m.engines["mini"] = em
    em.tokenized(0.002)
    em.batch(500, [0.01, 0.02, 0.3], forward_s=0.05, pool_s=0.001)
    em.batch(1000, [0.001], forward_s=0.07, pool_s=0.002)
    m.write_observed(0.004)
    m.job_ended("ingest", "done")
    m.job_ended("ingest", "failed")
    m.job_ended("reindex", "retried")
    m.queue_depth = {"ingest": 3.0, "search": 0.0}
    text = generate_latest(m.registry).decode()
    s = parse(text)
    assert families(text) == set(FAMILIES)
    assert value(s, "poolq_jobs_total", function="ingest", outcome="done") == 1
    assert value(s, "poolq_jobs_total", function="ingest", outcome="failed") == 1
    assert value(s, "poolq_jobs_total", function="reindex", outcome="retried") == 1
    assert value(s, "poolq_jobs_total", function="reindex", outcome="done") == 0
    assert value(s, "poolq_queue_depth", queue="ingest") == 3
    assert value(s, "poolq_batch_tokens_count", model="mini") == 2
    assert value(s, "poolq_batch_tokens_sum", model="mini") == 1500
    assert value(s, "poolq_batch_fill_ratio_bucket", model="mini", le="0.5") == 1
    assert value(s, "poolq_batch_fill_ratio_bucket", model="mini", le="1.0") == 2
    count = "poolq_stage_seconds_count"
    assert value(s, count, stage="tokenize", model="mini") == 1
    assert value(s, count, stage="queue_wait", model="mini") == 4  # one per text
    assert value(s, count, stage="forward", model="mini") == 2
    assert value(s, count, stage="pool", model="mini") == 2
    assert value(s, count, stage="write", model="") == 1
    assert value(s, "poolq_stage_seconds_sum", stage="forward", model="mini") == pytest.approx(0.12)
    assert value(s, "poolq_stage_seconds_bucket", stage="queue_wait", model="mini", le="0.01") == 2
    assert value(s, "poolq_stage_seconds_bucket", stage="queue_wait", model="mini", le="+Inf") == 4


class _FakeArqWorker:
    """What ``hook_arq`` touches of arq's Worker, driven like ``Worker.run_job`` drives it."""

    def __init__(self):
        self.functions = {"ingest": _Fn(), "reindex:docs:0": _Fn()}
        self.jobs_complete = self.jobs_failed = self.jobs_retried = 0
        self.on_job_end = None
        self.job_deserializer = None
        self.failed_before_run = []

    async def finish_failed_job(self, job_id, result_data):
        self.failed_before_run.append(job_id)

    async def run(self, name, outcome):
        ctx = {"job_id": "j"}
        try:
            await self.functions[name].coroutine(ctx, outcome)
        except RuntimeError:
            self.jobs_failed += 1
        except asyncio.CancelledError:
            self.jobs_retried += 1
        else:
            self.jobs_complete += 1
        await self.on_job_end(ctx)


class _Fn:
    @staticmethod
    async def coroutine(ctx, outcome):
        if outcome == "failed":
            raise RuntimeError("boom")
        if outcome == "retried":
            raise asyncio.CancelledError


def test_job_outcomes_follow_arq_counters_per_function():
    m = WorkerMetrics()
    w = _FakeArqWorker()
    m.hook_arq(w)

    async def drive():
        await w.run("ingest", "done")
        await w.run("ingest", "done")
        await w.run("ingest", "failed")
        await w.run("reindex:docs:0", "retried")
        await w.run("reindex:docs:0", "done")
        w.jobs_failed += 1  # a job failed before it ran (max tries exceeded)
        await w.finish_failed_job("k", None)

    asyncio.run(drive())
    assert w.failed_before_run == ["k"]
    assert m.jobs[("ingest", "done")] == 2
    assert m.jobs[("ingest", "failed")] == 1
    assert m.jobs[("reindex", "retried")] == 1
    assert m.jobs[("reindex", "done")] == 1
    assert m.jobs[("unknown", "failed")] == 1


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


async def _ingest_and_fail(url: str, docs: list[dict]) -> tuple[list, str]:
    async with PoolqClient(url) as client:
        ids = await client.enqueue("metrics", docs, job_size=4)
        outcomes = await client.wait(ids, timeout_s=300)
        bad = await client.redis.enqueue_job("ingest", "metrics", "not a list")
        assert bad is not None
        status = (await client.wait([bad.job_id], timeout_s=60))[0].status
        return outcomes, status


@pytest.mark.slow
def test_metrics_endpoint_moves_with_jobs(redis_server, tmp_path):
    from poolq.worker.dev.local_worker import WorkerProcess

    port = _free_port()
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(passages(12))]
    with WorkerProcess(redis_server.url, tmp_path / "qdrant", "--metrics-port", str(port)):
        before_text = scrape(port)
        before = parse(before_text)
        assert families(before_text) == set(FAMILIES)
        outcomes, bad_status = asyncio.run(_ingest_and_fail(redis_server.url, docs))
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
    assert moved("poolq_points_written_total") == sum(o.result["points"] for o in outcomes)
    for stage in STAGES:
        assert moved("poolq_stage_seconds_count", stage=stage) > 0, stage
        assert moved("poolq_stage_seconds_sum", stage=stage) > 0, stage
    assert moved("poolq_batch_tokens_count") > 0
    assert moved("poolq_batch_tokens_sum") > 0
    assert moved("poolq_batch_fill_ratio_count") == moved("poolq_batch_tokens_count")
    # each text waits once, per model: at least one queue wait per text sent
    assert moved("poolq_stage_seconds_count", stage="queue_wait") >= moved(
        "poolq_stage_seconds_count", stage="forward"
    )
    assert value(after, "poolq_queue_depth", queue="ingest") == 0
    assert value(after, "poolq_queue_depth", queue="search") == 0
    models = {dict(ls)["model"] for n, ls in after if n == "poolq_engine_backlog_tokens"}
    assert models and "" not in models
    for model in models:
        assert value(after, "poolq_engine_backlog_tokens", model=model) == 0
        assert value(after, "poolq_engine_backlog_requests", model=model) == 0
    assert ("poolq_sink_retries_total", ()) in after
    assert ("poolq_searches_total", (("outcome", "ok"),)) in after
