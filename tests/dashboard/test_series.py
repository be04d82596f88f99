"""The time series the charts draw: the worker's writer (once a step, counters added across
workers, the depth overwritten, a ring that never grows past its slots) and the overview's
tick within 20 Redis commands."""

from __future__ import annotations

import asyncio
import time

import redis as redis_sync

from poolq.ingest.dashboard.overview import overview
from poolq.wire import constants
from poolq.wire.records.heartbeat import Heartbeat
from poolq.wire.series import read_ring, series_key
from poolq.worker.observability.series import SeriesWriter
from tests.dashboard import seed


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_workers_write_a_bounded_ring_per_metric(redis_server):
    r = redis_sync.Redis.from_url(redis_server.url)
    clock = Clock(1_000_000.0)
    a, b = SeriesWriter(clock=clock), SeriesWriter(clock=clock)
    r.zadd(constants.INGEST_QUEUE, {"j1": 1, "j2": 2})
    a.after_beat(r, Heartbeat("a", documents_done=10, chunks_done=30, jobs_done=2))
    b.after_beat(r, Heartbeat("b", documents_done=5, chunks_done=5, jobs_done=1))
    a.after_beat(r, Heartbeat("a", documents_done=99))  # within the step: not written
    docs = read_ring(r.hgetall(series_key("documents")), clock.t)
    assert docs == [(1_000_000.0, 15)]
    assert read_ring(r.hgetall(series_key("depth")), clock.t) == [(1_000_000.0, 2)]
    for step in range(1, 2 * constants.SERIES_SLOTS):  # two hours of steps
        clock.t += constants.SERIES_STEP_S
        a.after_beat(r, Heartbeat("a", documents_done=10 + step))
    docs = read_ring(r.hgetall(series_key("documents")), clock.t)
    assert len(docs) == constants.SERIES_SLOTS and all(v == 1 for _, v in docs)
    assert r.hlen(series_key("documents")) == 2 * constants.SERIES_SLOTS
    assert r.ttl(series_key("documents")) > 0
    r.close()


def test_an_overview_tick_costs_at_most_20_commands(redis_server):
    async def go():
        from poolq.ingest.client import PoolqClient

        async with PoolqClient(redis_server.url) as c:
            ids = await seed.enqueue(
                c, "docs", [{"id": f"d{i}", "text": "t"} for i in range(50)], job_size=1
            )
            for w in range(8):
                await seed.worker(c.redis, f"w{w}", running=ids[w * 2 : w * 2 + 2])
            before = await c.redis.info("commandstats")
            o = await overview(c.redis, now=time.time())
            after = await c.redis.info("commandstats")
        calls = lambda info: sum(v["calls"] for k, v in info.items() if k.startswith("cmdstat_"))  # noqa: E731
        return o, calls(after) - calls(before) - 1

    o, n = asyncio.run(go())
    assert o["counts"]["running"] == 16 and o["counts"]["queued"] == 34
    assert n <= 20, n
