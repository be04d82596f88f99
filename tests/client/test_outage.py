"""A connected client rides out a Redis outage as the worker does: ``wait`` and
``status`` try again on the worker's reconnect backoff, ``wait`` reports how long Redis has been
down, and both give up with one line once Redis has been unreachable for
``redis_outage_limit_s``. A real redis-server (append-only persistence) stopped and started on
the same port and folder; no worker (the test records the job's end as a worker does)."""

from __future__ import annotations

import asyncio
import time

import pytest

from poolq.ingest.client import PoolqClient, WaitProgress
from poolq.ingest.outage import REDIS_OUTAGE_LIMIT_S, RedisOutage, outage_limit_s
from poolq.wire.connection import RedisUnavailableError, WorkerRetry, reconnect_backoff
from poolq.wire.records.results import IngestResult
from poolq.worker.reliability import job_records

RESULT = IngestResult(points=1, documents=1)


def test_the_limit_comes_from_the_argument_then_the_environment(monkeypatch):
    monkeypatch.delenv("POOLQ_REDIS_OUTAGE_LIMIT_S", raising=False)
    assert outage_limit_s() == REDIS_OUTAGE_LIMIT_S == 300
    monkeypatch.setenv("POOLQ_REDIS_OUTAGE_LIMIT_S", "12.5")
    assert outage_limit_s() == 12.5 and outage_limit_s(3) == 3.0
    assert PoolqClient().redis_outage_limit_s == 12.5
    monkeypatch.setenv("POOLQ_REDIS_OUTAGE_LIMIT_S", "soon")
    with pytest.raises(
        ValueError,
        match=r"^POOLQ_REDIS_OUTAGE_LIMIT_S: expected a number of seconds, got 'soon'$",
    ):
        PoolqClient()
    with pytest.raises(ValueError, match=r"^redis_outage_limit_s: expected"):
        outage_limit_s(-1)


def test_the_client_waits_on_the_workers_backoff_and_gives_up_at_the_limit():
    now = [100.0]
    outage = RedisOutage("127.0.0.1:1", limit_s=10.0, clock=lambda: now[0])
    worker = WorkerRetry("127.0.0.1:1")._backoff
    delays = []
    for attempt in range(1, 8):
        delays.append(outage.failed(ConnectionError("refused")))
        assert delays[-1] == worker.compute(attempt) == reconnect_backoff().compute(attempt)
        now[0] += 1.0
    assert delays[-1] == 2.0 and outage.down_s == 7.0
    now[0] = 109.5
    assert outage.failed(ConnectionError("refused")) == 0.5  # never past the limit
    now[0] = 110.0
    with pytest.raises(RedisUnavailableError) as e:
        outage.failed(ConnectionError("Connection refused"))
    assert str(e.value) == (
        "Redis at 127.0.0.1:1 has not been reachable for 10.0s (redis_outage_limit_s 10): "
        "Connection refused"
    )
    assert outage.succeeded() == 10.0 and outage.down_s is None


async def test_wait_rides_out_a_restart_and_shows_the_outage(redis_server):
    seen: list[WaitProgress] = []
    async with PoolqClient(redis_server.url, redis_outage_limit_s=60) as client:
        (job_id,) = await client.enqueue("docs", [{"id": "a", "text": "x"}])
        waiting = asyncio.ensure_future(client.wait([job_id], on_progress=seen.append))
        await asyncio.sleep(0.5)
        redis_server.stop(kill=True)
        t_down = time.monotonic()
        await asyncio.sleep(6)  # (tries at about 0, 0.4, 1, 2, 3.8, 5.6 s: the backoff)
        assert not waiting.done()
        redis_server.start()
        assert await client.redis.exists(f"arq:job:{job_id}")  # (append-only: kept)
        await job_records.record_outcome(
            client.redis, job_id, success=True, result=RESULT.to_wire()
        )
        (outcome,) = await asyncio.wait_for(waiting, 30)
    assert outcome.status == "done" and outcome.result == RESULT
    down = [p.redis_down_s for p in seen if p.redis_down_s is not None]
    assert len(down) >= 3 and down == sorted(down)
    assert 3.0 <= down[-1] <= time.monotonic() - t_down
    assert seen[-1].redis_down_s is None and seen[-1].finished == 1


async def test_wait_gives_up_after_the_limit_with_one_line(redis_server):
    async with PoolqClient(redis_server.url, redis_outage_limit_s=2) as client:
        (job_id,) = await client.enqueue("docs", [{"id": "a", "text": "x"}])
        redis_server.stop(kill=True)
        t0 = time.monotonic()
        with pytest.raises(RedisUnavailableError) as e:
            await client.wait([job_id])
        seconds = time.monotonic() - t0
        redis_server.start()
    assert 2.0 <= seconds < 8, seconds
    message = str(e.value)
    assert message.startswith(f"Redis at 127.0.0.1:{redis_server.port} has not been reachable for ")
    assert "(redis_outage_limit_s 2)" in message and "\n" not in message


async def test_status_rides_out_a_restart(redis_server):
    notes: list[float | None] = []
    async with PoolqClient(redis_server.url) as client:
        (job_id,) = await client.enqueue("docs", [{"id": "a", "text": "x"}])
        redis_server.stop(kill=True)
        asking = asyncio.ensure_future(client.status([job_id], on_outage=notes.append))
        await asyncio.sleep(2)
        assert not asking.done()
        redis_server.start()
        st = await asyncio.wait_for(asking, 30)
    assert [o.status for o in st.jobs] == ["queued"]
    assert notes[-1] is None and all(isinstance(n, float) for n in notes[:-1]) and len(notes) >= 2
