"""Liveness that cannot starve, on a real ``redis-server``:

* the heartbeat comes from a thread of its own: an event loop blocked longer than the
  heartbeat's expiry, beside two busy processes, does not let it lapse;
* a worker never reaps itself, and reaps another only once confirmed dead;
* a job handed back while its first run is alive runs once: the second run waits for the run
  lock and returns the first run's result (no second execution, no ``KeyError``).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from redis.asyncio import Redis

from poolq.wire import constants
from poolq.wire.records.heartbeat import Heartbeat
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.reliability import job_records
from poolq.worker.reliability.heartbeat import HeartbeatThread
from poolq.worker.reliability.job_guard import guarded
from poolq.worker.reliability.reap_decisions import WorkerJobs, confirmed_dead
from poolq.worker.reliability.reaper import reap_dead_workers
from poolq.worker.reliability.run_lock import RunLocks, lock_key

pytestmark = pytest.mark.slow


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.fixture
def busy_neighbours() -> Iterator[None]:
    """Two processes spinning on the CPU (as many as CI has cores)."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_spin, args=(120,), daemon=True) for _ in range(2)]
    for p in procs:
        p.start()
    yield
    for p in procs:
        p.terminate()
        p.join()


@pytest.fixture
async def redis(redis_server: LocalRedis) -> AsyncIterator[Redis]:
    r = Redis.from_url(redis_server.url)
    yield r
    await r.aclose()


async def test_the_heartbeat_outlives_a_blocked_event_loop_beside_busy_neighbours(
    redis_server: LocalRedis, redis: Redis, busy_neighbours: None
) -> None:
    ttl_s, interval_s = 2.0, 0.5
    hb = HeartbeatThread(
        redis_server.url,
        "w-busy",
        lambda: Heartbeat("w-busy"),
        interval_s=interval_s,
        ttl_s=ttl_s,
    ).start()
    key = constants.HEARTBEAT_KEY.format(worker_id="w-busy")
    try:
        beats = hb.beats
        _spin(3 * ttl_s)  # the event loop (this thread) holds on, well past the expiry
        assert hb.beats - beats >= 3, "the heartbeat thread did not beat while the loop was busy"
        lapses = 0
        for _ in range(20):  # and from outside, the key never expires meanwhile
            lapses += not await redis.exists(key)
            _spin(0.2)
        assert lapses == 0
    finally:
        hb.stop()


def test_a_worker_never_reaps_itself_and_others_only_once_confirmed() -> None:
    lists = [WorkerJobs("me", alive=False, jobs=frozenset({"j1"})), WorkerJobs("other", False)]
    suspects: dict[str, float] = {}
    assert confirmed_dead(lists, suspects, 100.0, self_id="me", confirm_s=10) == []
    assert confirmed_dead(lists, suspects, 105.0, self_id="me", confirm_s=10) == []
    assert [
        w.worker_id for w in confirmed_dead(lists, suspects, 110.0, self_id="me", confirm_s=10)
    ] == ["other"]
    # a heartbeat seen again in between restarts the count (a Redis restart, then beats)
    suspects.clear()
    confirmed_dead(lists, suspects, 100.0, self_id="me", confirm_s=10)
    alive = [WorkerJobs("other", True)]
    confirmed_dead(alive, suspects, 105.0, self_id="me", confirm_s=10)
    assert confirmed_dead(lists, suspects, 112.0, self_id="me", confirm_s=10) == []


async def test_the_reaper_skips_itself_and_jobs_whose_run_is_alive(redis: Redis) -> None:
    for worker, job in (("me", "mine"), ("gone", "locked"), ("gone", "free")):
        await redis.sadd(constants.WORKER_JOBS_KEY.format(worker_id=worker), job)
        await redis.set("arq:in-progress:" + job, b"1")
    await redis.set(lock_key("locked"), "someone-alive:t", px=10_000)
    handed = await reap_dead_workers(redis, self_id="me")
    assert handed == ["free"]
    assert await redis.exists("arq:in-progress:mine", "arq:in-progress:locked") == 2


def job_ctx(redis: Redis, worker_id: str, locks: RunLocks) -> dict[str, Any]:
    rt = SimpleNamespace(worker_id=worker_id, jobs_retried=0, jobs_failed=0, run_locks=locks)
    settings = SimpleNamespace(job_stall_timeout_s=60, job_timeout_s=600, keep_result_s=60)
    return {"job_id": "j-twice", "job_try": 1, "redis": redis, "runtime": rt, "settings": settings}


async def test_a_job_handed_back_while_its_first_run_is_alive_runs_once(redis: Redis) -> None:
    runs: list[str] = []
    release = asyncio.Event()

    async def job(ctx: dict[str, Any], collection: str) -> dict[str, int]:
        runs.append(ctx["runtime"].worker_id)
        await release.wait()
        return {"points": 7}

    run = guarded(job, name=constants.INGEST_JOB, max_tries=3)
    first = asyncio.create_task(run(job_ctx(redis, "w-a", RunLocks("w-a")), "c"))
    while not runs:
        await asyncio.sleep(0.01)
    second = asyncio.create_task(run(job_ctx(redis, "w-b", RunLocks("w-b")), "c"))
    await asyncio.sleep(1.5)
    assert runs == ["w-a"] and not second.done()  # waiting, not running it again
    release.set()
    assert await first == {"points": 7}
    assert await asyncio.wait_for(second, 10) == {"points": 7}  # the first run's result
    assert runs == ["w-a"]
    assert not await redis.exists(lock_key("j-twice"))


async def test_a_second_run_takes_over_when_the_first_dies(redis: Redis) -> None:
    """The first run's worker died: its lock expires unrefreshed, and the waiting run runs."""
    dead = RunLocks("w-dead")
    dead.ttl_ms = 800
    assert await dead.acquire(redis, "j-twice")  # and never refreshed again
    ran = []

    async def job(ctx: dict[str, Any], collection: str) -> str:
        ran.append(1)
        return "ok"

    run = guarded(job, name=constants.INGEST_JOB, max_tries=3)
    assert await asyncio.wait_for(run(job_ctx(redis, "w-b", RunLocks("w-b")), "c"), 10) == "ok"
    assert ran == [1]


async def test_a_run_is_listed_and_locked_while_it_runs_and_unlisted_with_its_outcome(
    redis: Redis,
) -> None:
    running_key = constants.WORKER_JOBS_KEY.format(worker_id="w-a")
    seen: list[Any] = []

    async def job(ctx: dict[str, Any], collection: str) -> dict[str, int]:
        seen.append((await redis.smembers(running_key), await redis.get(lock_key("j-twice"))))
        return {"points": 3}

    ctx = job_ctx(redis, "w-a", RunLocks("w-a"))
    assert await guarded(job, name=constants.INGEST_JOB, max_tries=3)(ctx, "c") == {"points": 3}
    members, holder = seen[0]
    assert members == {b"j-twice"} and holder.startswith(b"w-a:")
    assert not await redis.exists(running_key, lock_key("j-twice"))
    assert ctx[job_records.OUTCOME_RECORDED] is True
    assert await redis.zscore(job_records.DONE, "j-twice") is not None
