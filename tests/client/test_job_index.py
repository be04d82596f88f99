"""The job index behind ``poolq status``: outcomes a real :class:`PoolqWorker` records as its
jobs end (done, failed for good, failed by arq before they ran; a retry is neither), counted over
arq's result TTL and trimmed by age, on a real ``redis-server``."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest
from arq.worker import func

from poolq.ingest.client import JobOutcome, PoolqClient
from poolq.wire import constants
from poolq.wire.connection import redis_settings
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.results import IngestResult
from poolq.wire.serialization import deserialize, serialize
from poolq.worker.reliability import job_guard, job_index_hooks, job_records
from poolq.worker.reliability.arq_overrides import PoolqWorker

DAY = 24 * 3600
EMPTY = IngestResult(0, 0).to_wire()  # what an ingest job of no documents returns
WORKER = "w-index"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def ok(ctx: dict[str, Any], n: int = 1) -> dict[str, int]:
    return {"documents": n, "points": 2 * n}


async def bad(ctx: dict[str, Any]) -> None:
    raise ValueError("document 'x': text: empty")


async def flaky(ctx: dict[str, Any]) -> dict[str, int]:
    if ctx["job_try"] == 1:
        raise ConnectionError("connection refused")  # transient: retried by the queue
    return {"documents": 1, "points": 1}


async def sleepy(ctx: dict[str, Any]) -> None:
    await asyncio.sleep(30)  # arq times it out


async def block(ctx: dict[str, Any]) -> dict[str, int]:
    await ctx["release"].wait()
    return {"documents": 0, "points": 0}


async def startup(ctx: dict[str, Any]) -> None:
    """What the worker's startup does for the index (its heartbeat, as the worker writes it)."""
    ctx["runtime"] = SimpleNamespace(worker_id=WORKER, jobs_retried=0, jobs_failed=0)
    record = {"worker_id": WORKER, "seen_at": time.time(), "jobs_done": 0, "points_written": 0}
    key = constants.HEARTBEAT_KEY.format(worker_id=WORKER)
    await ctx["redis"].set(key, serialize(record), ex=60)
    await job_index_hooks.install_job_index(ctx)


def worker(url: str, release: asyncio.Event) -> PoolqWorker:
    guarded = [
        func(job_guard.guarded(f, name=f.__name__, max_tries=3), name=f.__name__, max_tries=3)
        for f in (ok, bad, flaky, block)
    ]
    timed_out = func(
        job_guard.guarded(sleepy, name="sleepy", max_tries=3), name="sleepy", timeout=0.3
    )
    return PoolqWorker(
        functions=[*guarded, timed_out, func(ok, name="unguarded")],  # (cron jobs: unguarded)
        redis_settings=redis_settings(url),
        queue_name=constants.INGEST_QUEUE,
        on_startup=startup,
        job_serializer=serialize,
        job_deserializer=deserialize,
        max_jobs=1,
        poll_delay=0.02,
        handle_signals=False,
        ctx={"release": release},
    )


async def until(check, timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = await check()
        if value or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.05)


async def test_status_counts_a_mix_recorded_by_a_real_worker(redis_server, monkeypatch):
    monkeypatch.setattr(job_guard, "RETRY_BACKOFF_S", (0.05,))
    release = asyncio.Event()
    w = worker(redis_server.url, release)
    async with PoolqClient(redis_server.url) as client:
        r = client.redis
        enq = r.enqueue_job
        done = [(await enq("ok", n)).job_id for n in (1, 2, 3)]
        retried = (await enq("flaky")).job_id
        failed = [(await enq("bad")).job_id for _ in range(2)]
        unknown = (await enq("no_such_function")).job_id  # arq fails it without running it
        too_many = (await enq("ok", _job_try=9)).job_id  # max tries exceeded, not run
        expired = (await enq("ok", _defer_by=0.4, _expires=0.05)).job_id  # gone when due
        unguarded = (await enq("unguarded", 5)).job_id  # done, recorded from arq's result
        timed_out = (await enq("sleepy")).job_id  # failed: arq's timeout

        task = asyncio.create_task(w.main())
        try:

            async def settled():
                st = await client.status()
                return st if st.counts["done"] == 5 and st.counts["failed"] == 6 else None

            st = await until(settled)
            assert st, (await client.status()).counts

            gate = (await enq("block")).job_id

            async def running():
                return (await client.status()).counts["running"] == 1

            assert await until(running)  # (then the next ones wait: one job at a time)
            queued = [(await enq("ok", 7)).job_id for _ in range(2)]
            deferred = (await enq("ok", _defer_by=3600)).job_id
            # a worker killed mid-job leaves its list of running jobs: not counted (no heartbeat)
            await r.sadd(constants.WORKER_JOBS_KEY.format(worker_id="dead"), queued[0])
            st = await client.status()
            assert st.counts == {
                "queued": 2, "running": 1, "done": 5, "failed": 6, "not_found": 0, "deferred": 1,
            }  # fmt: skip
            assert st.workers_alive == 1 and [x.worker_id for x in st.workers] == [WORKER]

            given = [retried, failed[0], too_many, expired, unknown, done[2], gate, queued[1]]
            st = await client.status([*given, deferred, unguarded, timed_out, "never-enqueued"])
            assert [o.status for o in st.jobs] == [
                "done", "failed", "failed", "failed", "failed", "done", "running", "queued",
                "deferred", "done", "failed", "not_found",
            ]  # fmt: skip
            by_id = {o.job_id: o for o in st.jobs}
            assert by_id[retried] == JobOutcome(retried, "done", IngestResult(1, 1))
            assert by_id[failed[0]].code == ErrorCode.BAD_REQUEST
            assert by_id[failed[0]].error.endswith("document 'x': text: empty")
            # failed by arq before they ran: its JobExecutionFailed, an internal error
            assert "max 3 retries exceeded" in by_id[too_many].error
            assert "expired" in by_id[expired].error
            assert "no_such_function" in by_id[unknown].error
            assert {by_id[j].code for j in (too_many, expired, unknown)} == {ErrorCode.INTERNAL}
            assert by_id[unguarded].result == IngestResult(points=10, documents=5)
            assert by_id[timed_out].code == ErrorCode.TIMEOUT

            release.set()
            ends = [gate, *queued]

            async def all_ended():  # (finished() lists the ended ones: all three, not any)
                return len(await client.finished(ends)) == len(ends)

            assert await until(all_ended)

            async def counted():  # an outcome is recorded just before arq takes the job off
                st = await client.status()  # its queue (finish_job): the counts then settle
                c = st.counts
                return st if (c["done"], c["queued"], c["running"]) == (8, 0, 0) else None

            st = await until(counted, timeout_s=5.0)
            assert st, (await client.status()).counts
            # the newest finished jobs, newest first (the two queued ones: same enqueue time)
            newest = [o.job_id for o in st.jobs[:3]]
            assert set(newest[:2]) == set(queued) and newest[2] == gate
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await w.close()
        # what the index keeps per job: its outcome, never its arguments
        raw = await r.get(constants.JOB_OUTCOME_KEY.format(job_id=done[0]))
        assert deserialize(raw)["result"] == {"documents": 1, "points": 2}
        assert 0 < await r.ttl(constants.JOB_OUTCOME_KEY.format(job_id=done[0])) <= DAY


async def test_outcomes_are_trimmed_by_age_on_every_write_and_counted_over_the_ttl(redis_server):
    clock = Clock(1_000_000.0)
    async with PoolqClient(redis_server.url, clock=clock) as client:
        r = client.redis
        t0 = clock.now
        for i in range(3):
            await job_records.record_outcome(r, f"old-{i}", success=True, result=EMPTY, now=t0)
        await job_records.record_outcome(
            r, "old-bad", success=False, error="E: x", code=ErrorCode.INTERNAL, now=t0
        )
        clock.now = t0 + constants.JOB_INDEX_TTL_S - 10  # still within the TTL
        assert (await client.status()).counts == {
            "queued": 0, "running": 0, "done": 3, "failed": 1, "not_found": 0, "deferred": 0,
        }  # fmt: skip
        clock.now = t0 + constants.JOB_INDEX_TTL_S + 10  # older than the TTL: not counted
        st = await client.status()
        assert (st.counts["done"], st.counts["failed"]) == (0, 0) and st.jobs == []
        assert await r.zcard(constants.JOB_INDEX_DONE_KEY) == 3  # (nothing written since)
        await job_records.record_outcome(r, "new", success=True, result=EMPTY, now=clock.now)
        assert [m.decode() for m in await r.zrange(constants.JOB_INDEX_DONE_KEY, 0, -1)] == ["new"]
        assert await r.zcard(constants.JOB_INDEX_FAILED_KEY) == 0  # both sets trimmed
        # a job recorded again (re-run after its worker died) is counted once, by its last end
        await job_records.record_outcome(
            r, "new", success=False, error="E: y", code=ErrorCode.INTERNAL, now=clock.now + 1
        )
        st = await client.status()
        assert (st.counts["done"], st.counts["failed"]) == (0, 1)
        assert constants.JOB_INDEX_TTL_S == 24 * 3600  # arq's keep_result default


async def test_status_is_a_few_commands_whatever_the_number_of_jobs(redis_server):
    """Counts come from a handful of commands, never one per job (INFO commandstats of the real
    server counts them)."""
    async with PoolqClient(redis_server.url) as client:
        r = client.redis
        now = time.time()
        async with r.pipeline(transaction=False) as p:
            for i in range(3000):
                job_records.add_outcome(
                    p, f"job-{i}", success=i % 3 > 0, error="E", code=ErrorCode.INTERNAL, now=now
                )
            await p.execute()
        await r.config_resetstat()
        st = await client.status()
        assert st.counts["done"] == 2000 and st.counts["failed"] == 1000
        assert await commands(r) < 30
        st = await client.status([f"job-{i}" for i in range(3000)])
        assert st.counts["done"] == 2000 and len(st.jobs) == 3000
        assert await commands(r) < 30  # the outcomes of a thousand jobs per command


async def commands(r) -> int:
    """Commands the server ran since the last call (INFO and CONFIG RESETSTAT aside)."""
    stats = await r.info("commandstats")
    await r.config_resetstat()
    return sum(v["calls"] for k, v in stats.items() if k not in ("cmdstat_info", "cmdstat_config"))


async def test_enqueue_writes_no_index(redis_server):
    async with PoolqClient(redis_server.url) as client:
        (job_id,) = await client.enqueue("c", [{"id": "a", "text": "x"}])
        # the index (jobs:done, jobs:failed) is the workers' to write, when jobs end
        assert [k async for k in client.redis.scan_iter(constants.KEY_PREFIX + "jobs*")] == []
        st = await client.status()
        assert st.counts["queued"] == 1 and st.workers_alive == 0
        assert (await client.status([job_id])).jobs[0].status == "queued"


async def test_files_waiting_to_be_parsed_count_as_queued(redis_server):
    async with PoolqClient(redis_server.url) as client:
        ids = await client.enqueue("c", [{"id": "a", "bytes": b"A note."}], job_size=1)
        ids += await client.enqueue("c", [{"id": "b", "text": "x"}])
        assert await client.redis.zcard(constants.PARSE_QUEUE) == 1
        st = await client.status()
        assert st.counts["queued"] == 2
        assert [o.status for o in (await client.status(ids)).jobs] == ["queued", "queued"]


def test_an_outcome_read_from_arqs_result_carries_its_record_and_code():
    from arq.jobs import serialize_result

    from poolq.ingest.job_index import from_arq_result

    def stored(success: bool, result: Any) -> bytes:
        raw = serialize_result(
            "ingest", (), {}, 1, 0, success, result, 0, 1, "ingest", "q", "j", serializer=serialize
        )
        assert raw is not None
        return raw

    done = from_arq_result("j", stored(True, IngestResult(1, 1).to_wire()))
    assert done == JobOutcome("j", "done", IngestResult(1, 1))
    failed = from_arq_result("j", stored(False, TimeoutError("late")))
    assert (failed.status, failed.code) == ("failed", ErrorCode.TIMEOUT)
    assert failed.error is not None and failed.error.endswith(": late")
    # a result that is no record of poolq's: failed, internal, the field named
    odd = from_arq_result("j", stored(True, {"documents": 1}))
    assert (odd.status, odd.code, odd.result) == ("failed", ErrorCode.INTERNAL, None)
    assert odd.error == "unreadable result: ingest result: points: missing (a required field)"
    unreadable = from_arq_result("j", b"\x80\x04junk")
    assert (unreadable.status, unreadable.code) == ("failed", ErrorCode.INTERNAL)
