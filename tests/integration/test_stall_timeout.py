"""The stall limit against a real store write that hangs, under a real arq worker and Redis in
this process (the pattern of ``test_sink_faults.py``): the job is timed out once it stops
moving, retried with backoff, then dead-lettered with a message naming the job, its try, its
progress and the time spent; the client sees that message, never an empty one."""

import threading

import pytest

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


class HangingQdrant:
    """The real Edge store, except that ``upsert`` blocks until released (a write that hangs)."""

    def __init__(self, inner: EdgeStore) -> None:
        self._inner = inner
        self.release = threading.Event()
        self.hung = 0

    def upsert(self, *args, **kwargs):
        self.hung += 1
        self.release.wait(120)
        return self._inner.upsert(*args, **kwargs)

    def upsert_records(self, collection, records):  # the writer's call, through upsert above
        return Store.upsert_records(self, collection, records)

    def __getattr__(self, name):
        return getattr(self._inner, name)


@pytest.mark.timeout(600)
async def test_a_job_whose_write_hangs_is_timed_out_retried_then_dead_lettered(
    redis_server, tmp_path, monkeypatch
):
    monkeypatch.setattr(job_guard, "RETRY_BACKOFF_S", (0.2,))
    stores: list[HangingQdrant] = []

    def factory():
        stores.append(HangingQdrant(EdgeStore(tmp_path / "q")))
        return stores[-1]

    writer = QdrantWriter(store_factory=factory, max_retries=1, backoff_s=0.01)
    settings = Settings(redis_url=redis_server.url, max_tries=2, job_stall_timeout_s=5)
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(passages(6))]
    kw = worker_kwargs(settings)
    kw["ctx"]["writer"] = writer
    w = PoolqWorker(burst=True, handle_signals=False, **kw)  # as `poolq worker` builds it
    try:
        async with PoolqClient(redis_server.url) as client:
            (job_id,) = await client.enqueue("c", docs, job_size=10, priority="bulk")
            await w.main()
            (outcome,) = await client.wait([job_id], timeout_s=60)
            (entry,) = await entries(client.redis)
    finally:
        stores[0].release.set()
        await w.close()
    assert outcome.status == "failed"
    assert entry.job_id == job_id and entry.tries == 2
    error = entry.error
    assert entry.code == ErrorCode.STALLED and outcome.code == ErrorCode.STALLED
    assert f": job {job_id} ingest (try 2 of 2): no progress for" in error
    assert "0/6 documents done, 0 points written" in error and "since it started" in error
    assert outcome.error and "no progress" in outcome.error
    assert stores[0].hung >= 1
