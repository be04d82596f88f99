"""The client knows the worker's limits before it enqueues, says at once
that no worker is running (item 2), and reports job progress (item 8) - against a real Redis;
the tests with a live worker are in tests/integration/test_cli_first_hour.py."""

from __future__ import annotations

import time

import pytest

from poolq.ingest.client import PoolqClient
from poolq.ingest.workers_alive import NoWorkerError
from poolq.wire import constants
from poolq.wire.job_plan import Limits
from poolq.wire.records.heartbeat import Heartbeat, WorkerLimits


async def queued(client: PoolqClient) -> int:
    return int(await client.redis.zcard(constants.INGEST_QUEUE))


async def test_an_impossible_job_size_is_refused_before_anything_is_enqueued(redis_server):
    docs = [{"id": f"d{i}", "text": "x"} for i in range(3)]
    async with PoolqClient(redis_server.url) as client:
        with pytest.raises(ValueError, match="job_size 2000 is over the default limit of 1000"):
            await client.enqueue("docs", docs, job_size=2000)
        assert await queued(client) == 0
        assert (await client.limits()) == Limits()  # no live worker: the defaults


def test_the_smallest_limit_of_the_live_workers_is_used():
    a = Heartbeat("w-a", limits=WorkerLimits(10, 1000, 100_000))
    b = Heartbeat("w-b", limits=WorkerLimits(20, 500, 200_000))
    read = [Heartbeat.unpack(h.pack()) for h in (a, b)]  # as the client reads them from Redis
    assert Limits.from_heartbeats(read) == Limits(10, 500, 100_000, source="worker")
    assert Limits.from_heartbeats([]) == Limits()  # no live worker: the defaults


async def test_jobs_are_split_to_fit_the_payload_limit(redis_server):
    limits = Limits(max_job_bytes=100_000)
    docs = [{"id": f"d{i}", "text": "word " * 6_000} for i in range(20)]  # 30 kB each
    async with PoolqClient(redis_server.url) as client:
        job_ids = await client.enqueue("docs", docs, job_size=32, limits=limits)
        assert len(job_ids) == 7  # 3 documents per job
        sizes = [len(await client.redis.get(f"arq:job:{j}")) for j in job_ids]
        assert max(sizes) <= limits.max_job_bytes
        assert await queued(client) == 7


async def test_a_document_no_job_can_carry_is_refused_naming_it(redis_server):
    limits = Limits(max_job_bytes=10_000)
    docs = [{"id": "small", "text": "x"}, {"id": "huge", "text": "y" * 20_000}]
    async with PoolqClient(redis_server.url) as client:
        with pytest.raises(ValueError, match=r"document 'huge' is 200\d\d bytes as a job payload"):
            await client.enqueue("docs", docs, limits=limits)
        assert await queued(client) == 0


async def test_force_and_priority_are_sent_as_the_jobs_keyword_arguments(redis_server):
    from poolq.wire.serialization import deserialize

    async with PoolqClient(redis_server.url) as client:
        (plain,) = await client.enqueue("docs", [{"id": "a", "text": "x"}])
        (forced,) = await client.enqueue("docs", [{"id": "a", "text": "x"}], force=True)
        lane = {"priority": "interactive"}  # (one job: see tests/client/test_priority.py)
        assert (
            deserialize(await client.redis.get(f"arq:job:{plain}"))["k"] == {"force": False} | lane
        )
        assert (
            deserialize(await client.redis.get(f"arq:job:{forced}"))["k"] == {"force": True} | lane
        )


async def test_a_search_with_no_worker_is_answered_at_once(redis_server):
    async with PoolqClient(redis_server.url) as client:
        t0 = time.monotonic()
        with pytest.raises(NoWorkerError, match="no worker is running on this Redis") as info:
            await client.search("hello", "docs", timeout_s=30)
        elapsed = time.monotonic() - t0
        print(f"client search with no worker: {elapsed * 1000:.0f} ms")
        assert elapsed < 2, elapsed
        assert f"127.0.0.1:{redis_server.port}" in str(info.value)
        assert "poolq worker" in str(info.value)
        assert await client.redis.llen(constants.SEARCH_QUEUE) == 0  # the request taken back
        assert isinstance(info.value, TimeoutError)  # what callers caught before


async def test_waiting_with_no_worker_reports_it_and_times_out(redis_server):
    seen = []
    async with PoolqClient(redis_server.url) as client:
        job_ids = await client.enqueue("docs", [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}])
        with pytest.raises(TimeoutError, match="no worker is running"):
            await client.wait(job_ids, timeout_s=1.5, on_progress=seen.append)
        assert seen and seen[-1].workers_alive == 0
        assert (seen[-1].jobs, seen[-1].finished, seen[-1].documents) == (1, 0, 2)
        assert await client.progress(job_ids) == {}  # no worker has started them
