"""Deadlines that measure progress (``reliability/deadlines.py``): a job that keeps moving is
never timed out, however long it runs below the ceiling; one that stops is cancelled after the
stall limit with a message naming it and its progress; the guard retries it, then
dead-letters it (checked on a real ``redis-server``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from arq.worker import Retry
from redis.asyncio import Redis

from poolq.wire import constants
from poolq.wire.serialization import deserialize
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.reliability.deadlines import (
    JobClock,
    JobStalledError,
    JobTimedOutError,
    run_with_deadlines,
)
from poolq.worker.reliability.job_guard import guarded, is_transient_job_error
from poolq.worker.runtime.job_progress import JobProgress


async def ticking(clock: JobClock, seconds: float, every: float) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        await asyncio.sleep(every)
        clock.tick()
    return "finished"


async def test_a_job_that_keeps_moving_outlives_its_stall_limit() -> None:
    clock = JobClock()
    out = await run_with_deadlines(
        ticking(clock, 1.5, 0.1), what="job j", clock=clock, stall_s=0.5, ceiling_s=30
    )
    assert out == "finished"


async def test_a_job_that_stops_moving_is_cancelled_with_its_progress_named() -> None:
    clock = JobClock()
    progress = JobProgress(None, "j", documents=8, clock=clock)
    cancelled = asyncio.Event()

    async def body() -> None:
        progress.add(done=3, points=21)
        try:
            await asyncio.Event().wait()  # a write that hangs: only a cancel ends it
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(JobStalledError) as info:
        await run_with_deadlines(
            body(), what="job j ingest", clock=clock, stall_s=0.5, ceiling_s=30
        )
    assert cancelled.is_set()  # the stall check cancelled it (the ceiling would time it out)
    message = str(info.value)
    assert message.startswith("job j ingest: no progress for")
    assert "(stall limit 0.5s, POOLQ_JOB_STALL_TIMEOUT_S)" in message
    assert "3/8 documents done, 21 points written" in message
    assert "POOLQ_JOB_STALL_TIMEOUT_S" in message
    assert is_transient_job_error(info.value)  # retried with backoff


async def test_engine_progress_counts_as_progress() -> None:
    """A job whose chunks are being computed moves, even before anything is written."""
    clock = JobClock()
    out = await run_with_deadlines(
        asyncio.sleep(1.2, "done"),
        what="job j",
        clock=clock,
        stall_s=0.5,
        ceiling_s=30,
        engine_progress=time.monotonic,
    )
    assert out == "done"


async def test_the_ceiling_stops_a_job_that_moves_forever() -> None:
    clock = JobClock()
    with pytest.raises(JobTimedOutError, match=r"job j: still running after \d+s \(ceiling 1s"):
        await run_with_deadlines(
            ticking(clock, 60, 0.05), what="job j", clock=clock, stall_s=10, ceiling_s=1
        )


# ---------------------------------------------------------------- through the guard


@pytest.fixture
async def redis(redis_server: LocalRedis) -> AsyncIterator[Redis]:
    r = Redis.from_url(redis_server.url)
    yield r
    await r.aclose()


def job_ctx(redis: Any, job_try: int) -> dict[str, Any]:
    rt = SimpleNamespace(worker_id="w-1", jobs_retried=0, jobs_failed=0)
    settings = SimpleNamespace(job_stall_timeout_s=1, job_timeout_s=60, keep_result_s=60)
    return {
        "job_id": "j-9",
        "job_try": job_try,
        "redis": redis,
        "runtime": rt,
        "settings": settings,
    }


async def hanging_job(ctx: dict[str, Any], collection: str, documents: list[Any]) -> None:
    progress = JobProgress(None, ctx["job_id"], documents=len(documents), clock=ctx["job_clock"])
    progress.add(done=1, points=4)
    await asyncio.sleep(3600)


async def test_a_stalled_job_is_retried_then_dead_lettered_naming_job_and_progress(
    redis: Redis,
) -> None:
    run = guarded(hanging_job, name=constants.INGEST_JOB, max_tries=2)
    with pytest.raises(Retry) as retry:
        await run(job_ctx(redis, 1), "c", [{"id": "a"}, {"id": "b"}])
    assert isinstance(retry.value.__cause__, JobStalledError)
    with pytest.raises(JobStalledError):
        await run(job_ctx(redis, 2), "c", [{"id": "a"}, {"id": "b"}])
    (raw,) = (await redis.hgetall(constants.DEAD_LETTER_KEY)).values()
    entry = deserialize(raw)
    assert entry["tries"] == 2
    assert entry["code"] == "stalled"
    assert ": job j-9 ingest (try 2 of 2): no progress" in entry["error"]
    assert "1/2 documents done, 4 points written" in entry["error"]
