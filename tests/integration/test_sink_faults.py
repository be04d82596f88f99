"""A Qdrant sink that fails, with fault injection around the real Qdrant Edge adapter, under a
real arq worker and Redis in this process: transient failures are retried and no job is lost;
a sink that keeps failing ends in the dead-letter list, from which `poolq dlq retry` recovers."""

import asyncio

import httpx
import pytest
from qdrant_client.http.exceptions import ResponseHandlingException

from poolq.ingest.cli.dlq import run_dlq
from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.sinks.store.edge import EdgeStore
from poolq.sinks.store.interface import Store
from poolq.sinks.writer import QdrantWriter
from poolq.wire.dead_letters import entries
from poolq.wire.records.codes import ErrorCode
from poolq.worker.app.worker_settings import worker_kwargs
from poolq.worker.config.settings import Settings
from poolq.worker.reliability import job_guard
from poolq.worker.reliability.arq_overrides import PoolqWorker

pytestmark = pytest.mark.slow


class FlakyQdrant:
    """The real Edge store, except that ``upsert`` fails with a transport error (what a server
    connection raises) while ``failures_left`` > 0 (-1: always)."""

    def __init__(self, inner: EdgeStore, failures: int) -> None:
        self._inner = inner
        self.failures_left = failures
        self.injected = 0

    def upsert(self, *args, **kwargs):
        if self.failures_left != 0:
            self.failures_left -= 1 if self.failures_left > 0 else 0
            self.injected += 1
            raise ResponseHandlingException(httpx.ConnectError("injected: connection refused"))
        return self._inner.upsert(*args, **kwargs)

    def upsert_records(self, collection, records):  # the writer's call, through upsert above
        return Store.upsert_records(self, collection, records)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def docs(n, prefix):
    return [{"id": f"{prefix}-{i}", "text": t} for i, t in enumerate(passages(n))]


async def run_worker_until_idle(settings, writer):
    kw = worker_kwargs(settings)
    kw["ctx"]["writer"] = writer
    w = PoolqWorker(burst=True, handle_signals=False, **kw)  # as `poolq worker` builds it
    try:
        await w.main()
    finally:
        await w.close()


async def test_transient_sink_failures_are_retried_and_nothing_is_lost(redis_server, tmp_path):
    flaky: list[FlakyQdrant] = []

    def factory():
        flaky.append(FlakyQdrant(EdgeStore(tmp_path / "q"), failures=4))
        return flaky[-1]

    writer = QdrantWriter(store_factory=factory, max_retries=6, backoff_s=0.01, max_backoff_s=0.05)
    settings = Settings(redis_url=redis_server.url, max_tries=3)
    batch = docs(40, "t")
    async with PoolqClient(redis_server.url) as client:
        ids = await client.enqueue("c", batch, job_size=10)
        await run_worker_until_idle(settings, writer)
        outcomes = await client.wait(ids, timeout_s=60)
        assert all(o.status == "done" for o in outcomes), [o.error for o in outcomes]
        assert await entries(client.redis) == []
    assert flaky[0].injected == 4 and writer.retries == 4
    check = EdgeStore(tmp_path / "q")
    try:
        assert check.count("c") == sum(o.result.points for o in outcomes) >= 40
    finally:
        check.close()


async def test_a_sink_that_keeps_failing_ends_in_the_dead_letter_list(
    redis_server, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(job_guard, "RETRY_BACKOFF_S", (0.2,))
    flaky: list[FlakyQdrant] = []

    def factory():
        flaky.append(FlakyQdrant(EdgeStore(tmp_path / "q"), failures=-1))
        return flaky[-1]

    writer = QdrantWriter(store_factory=factory, max_retries=1, backoff_s=0.01, max_backoff_s=0.01)
    settings = Settings(redis_url=redis_server.url, max_tries=3)
    async with PoolqClient(redis_server.url) as client:
        (job_id,) = await client.enqueue("c", docs(5, "p"), job_size=10)
        await run_worker_until_idle(settings, writer)
        (outcome,) = await client.wait([job_id], timeout_s=60)
        assert outcome.status == "failed"
        assert outcome.code == ErrorCode.SINK and "Qdrant unavailable" in outcome.error
        (entry,) = await entries(client.redis)
    # 3 tries (2 retries by the queue), each 2 attempts by the writer
    assert entry.job_id == job_id and entry.tries == 3 and flaky[0].injected == 6
    assert entry.function == "ingest" and entry.args[0] == "c"
    assert entry.code == ErrorCode.SINK

    assert await asyncio.to_thread(run_dlq, "list", [], False, redis_server.url, False) == 0
    out = capsys.readouterr().out
    assert job_id in out and "ingest('c', [5 items])" in out and "tries 3" in out

    # the sink recovers; the dead-lettered job is retried and lands
    assert await asyncio.to_thread(run_dlq, "retry", [job_id], False, redis_server.url, False) == 0
    new_id = capsys.readouterr().out.split("enqueued again as ")[1].strip()
    writer2 = QdrantWriter(store_factory=lambda: EdgeStore(tmp_path / "q"))
    await run_worker_until_idle(settings, writer2)
    async with PoolqClient(redis_server.url) as client:
        (again,) = await client.wait([new_id], timeout_s=60)
        assert again.status == "done" and again.result.documents == 5
        assert await entries(client.redis) == []
    assert await asyncio.to_thread(run_dlq, "drop", ["nope"], False, redis_server.url, False) == 1
