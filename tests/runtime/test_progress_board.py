"""The worker's progress board (``runtime/job_progress.py``): every running job's progress
between its milestones, written for all jobs in one pipeline a tick, never after a job's own
last write. Against a real ``redis-server``."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from redis.asyncio import Redis

from poolq.wire import constants
from poolq.wire.records.progress import JobProgressRecord
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.runtime import job_progress
from poolq.worker.runtime.job_progress import JobProgress, ProgressBoard


@pytest.fixture
async def redis(redis_server: LocalRedis):
    r = Redis.from_url(redis_server.url)
    yield r
    await r.aclose()


class CountingPipelines:
    """The real client, counting the pipelines executed through it (round trips)."""

    def __init__(self, redis: Redis) -> None:
        self.redis, self.executed = redis, 0

    def pipeline(self, **kw):
        pipe = self.redis.pipeline(**kw)
        execute = pipe.execute

        async def counted(*a, **k):
            self.executed += 1
            return await execute(*a, **k)

        pipe.execute = counted
        return pipe


async def _stored(redis: Redis, job_id: str) -> JobProgressRecord:
    raw = await redis.hgetall(constants.JOB_PROGRESS_KEY.format(job_id=job_id))
    stored = JobProgressRecord.from_hash(raw, strict=True)
    assert stored.updated_at > 0  # every write stamps it (the dashboard's stall timer)
    return replace(stored, updated_at=0)


async def test_one_pipeline_a_tick_writes_every_job_that_changed(redis, monkeypatch):
    monkeypatch.setattr(job_progress, "TICK_S", 0.05)
    client = CountingPipelines(redis)
    board = ProgressBoard(client)
    jobs = [JobProgress(client, f"j{i}", documents=4, board=board) for i in range(5)]
    for p in jobs:
        await p.__aenter__()
    assert client.executed == 0  # the jobs' first states go out with the board's next tick
    await asyncio.sleep(0.2)
    assert client.executed == 1  # one pipeline for all five, none at the ticks after
    for i in range(5):
        assert await _stored(redis, f"j{i}") == JobProgressRecord(4, 0, 0, 0, 0, 0)
    for i, p in enumerate(jobs):
        p.add(done=i + 1, chunks=2 * i)
    await asyncio.sleep(0.2)
    # five jobs changed at once: one pipeline for all of them, none at the ticks after
    assert client.executed == 2
    for i in range(5):
        assert await _stored(redis, f"j{i}") == JobProgressRecord(4, i + 1, 2 * i, 0, 0, 0)
    for p in jobs:
        await p.__aexit__(None, None, None)
    await asyncio.sleep(0.15)
    assert board._task is None or board._task.done()  # no job: the board sleeps no more
    await board.close()


async def test_a_jobs_last_write_is_never_overtaken_by_the_board(redis):
    board = ProgressBoard(redis)
    p = JobProgress(redis, "last", documents=2, board=board)
    await p.__aenter__()
    p.add(done=2, points=3)
    async with board.lock:  # the board's write of an older state is in flight
        ending = asyncio.create_task(p.__aexit__(None, None, None))
        await asyncio.sleep(0.05)
        assert not ending.done()  # the job's final write waits for it
    await ending
    assert await _stored(redis, "last") == JobProgressRecord(2, 2, 0, 3, 0, 0)
    await board.close()


async def test_without_a_board_a_job_ticks_on_its_own(redis, monkeypatch):
    monkeypatch.setattr(job_progress, "TICK_S", 0.05)
    p = JobProgress(redis, "alone", documents=3)
    async with p:
        p.add(done=1)
        await asyncio.sleep(0.2)
        assert await _stored(redis, "alone") == JobProgressRecord(3, 1, 0, 0, 0, 0)
