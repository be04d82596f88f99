"""Job priority (``PoolqClient.enqueue(priority=...)``): interactive jobs are scored ahead of
every bulk job in arq's queue (enqueue time less ``INTERACTIVE_HEAD_START_MS``) with arq's usual
one-day expiry, every ingest job carries its lane as the ``priority`` keyword argument, "auto"
is interactive for a call that makes one job; ``poolq status`` still counts an interactive job
as queued. Against a real Redis, no worker."""

from __future__ import annotations

import time

import pytest

from poolq.ingest.client import PoolqClient, SyncPoolqClient
from poolq.ingest.priority import ARQ_EXPIRES_EXTRA_MS
from poolq.wire import constants
from poolq.wire.serialization import deserialize

HEAD_START_MS = constants.INTERACTIVE_HEAD_START_MS
DOCS = [{"id": f"d{i}", "text": f"text {i}"} for i in range(4)]


async def placed(client: PoolqClient, job_id: str) -> tuple[float, str, int]:
    """A job's queue score (ms), its ``priority`` argument and its key's TTL (ms)."""
    score = await client.redis.zscore(constants.INGEST_QUEUE, job_id)
    job = deserialize(await client.redis.get(f"arq:job:{job_id}"))
    return float(score), job["k"].get("priority"), int(await client.redis.pttl(f"arq:job:{job_id}"))


async def test_auto_is_interactive_for_one_job_and_bulk_for_more(redis_server):
    async with PoolqClient(redis_server.url) as client:
        t0 = time.time() * 1000
        (one,) = await client.enqueue("docs", DOCS, job_size=32)
        many = await client.enqueue("docs", DOCS, job_size=2)
        t1 = time.time() * 1000
        score, lane, ttl = await placed(client, one)
        assert lane == "interactive"
        assert t0 - HEAD_START_MS - 5 <= score <= t1 - HEAD_START_MS + 5
        assert ARQ_EXPIRES_EXTRA_MS - 60_000 < ttl <= ARQ_EXPIRES_EXTRA_MS  # a day, as bulk
        for job_id in many:
            score, lane, ttl = await placed(client, job_id)
            assert lane == "bulk" and t0 - 5 <= score <= t1 + 5
            assert ARQ_EXPIRES_EXTRA_MS - 60_000 < ttl <= ARQ_EXPIRES_EXTRA_MS


async def test_interactive_jobs_start_ahead_of_bulk_ones_first_come_first_served(redis_server):
    async with PoolqClient(redis_server.url) as client:
        bulk = await client.enqueue("docs", DOCS, job_size=1, priority="bulk")
        first = await client.enqueue("docs", DOCS, job_size=2, priority="interactive")
        time.sleep(0.01)  # (scores are milliseconds)
        (second,) = await client.enqueue("docs", DOCS[:1])  # auto: one job
        order = [j.decode() for j in await client.redis.zrange(constants.INGEST_QUEUE, 0, -1)]
        # scores are milliseconds: the jobs of one call may tie, and Redis orders ties by member
        # (a random job id), so only the order between calls is promised
        assert set(order[:2]) == set(first) and order[2] == second and set(order[3:]) == set(bulk)
        assert len(order) == len(first) + 1 + len(bulk)
        assert {(await placed(client, j))[1] for j in first} == {"interactive"}
        # poolq status: an interactive job is due (queued), not deferred
        st = await client.status(order)
        assert st.counts["queued"] == len(order) and st.counts["deferred"] == 0
        assert {o.status for o in st.jobs} == {"queued"}
        st = await client.status()
        assert st.counts["queued"] == len(order) and st.counts["deferred"] == 0


async def test_an_unknown_priority_is_refused_naming_the_argument(redis_server):
    async with PoolqClient(redis_server.url) as client:
        with pytest.raises(
            ValueError, match=r"^priority: expected one of auto, interactive, bulk, got 'urgent'$"
        ):
            await client.enqueue("docs", DOCS, priority="urgent")
        assert await client.redis.zcard(constants.INGEST_QUEUE) == 0


def test_the_sync_client_takes_the_priority_too(redis_server):
    with SyncPoolqClient(redis_server.url) as client:
        (job_id,) = client.enqueue("docs", DOCS, priority="bulk")
        raw = client._run(client._client.redis.get(f"arq:job:{job_id}"))
    assert deserialize(raw)["k"] == {"force": False, "priority": "bulk"}
