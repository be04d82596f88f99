"""The job index behind ``poolq status``: time-ordered, trimmed by age, counted in batches."""

from __future__ import annotations

import pickle
import time

import redis.asyncio as aioredis
from arq.constants import in_progress_key_prefix, result_key_prefix
from arq.jobs import serialize_result
from redis.asyncio.client import Pipeline

from poolq.ingest.client import JobOutcome, PoolqClient
from poolq.ingest.job_index import RESULT_TAIL_BYTES, finished_outcome
from poolq.worker.wire import constants
from poolq.worker.wire.serialization import serialize

DAY = 24 * 3600


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def result_bytes(job_id: str, success: bool, result: object) -> bytes:
    """A result exactly as an arq worker stores it, with poolq's msgpack serializer."""
    now_ms = int(time.time() * 1000)
    data = serialize_result(
        constants.INGEST_JOB, ("docs", [{"id": "a", "text": "x" * 100}]), {}, 1, now_ms,
        success, result, now_ms, now_ms, job_id, constants.INGEST_QUEUE, job_id,
        serializer=serialize,
    )  # fmt: skip
    assert data is not None
    return data


async def finish(redis: aioredis.Redis, job_id: str, success: bool, result: object) -> None:
    """What arq does when a job ends: result written, job and queue entry gone."""
    async with redis.pipeline(transaction=True) as tr:
        tr.set(result_key_prefix + job_id, result_bytes(job_id, success, result), ex=DAY)
        tr.zrem(constants.INGEST_QUEUE, job_id)
        tr.delete("arq:job:" + job_id)
        await tr.execute()


async def test_index_is_trimmed_by_age_on_enqueue_and_at_status(redis_server):
    clock = Clock(1_000_000.0)
    async with PoolqClient(redis_server.url, clock=clock) as client:
        old = await client.enqueue("c", [{"id": "a", "text": "x"}] * 3, job_size=1)
        r = client.redis
        assert await r.zcard(constants.JOB_INDEX_ZSET_KEY) == 3
        assert await r.zscore(constants.JOB_INDEX_ZSET_KEY, old[0]) == clock.now
        # an entry written long ago by hand: status drops it
        await r.zadd(constants.JOB_INDEX_ZSET_KEY, {"ancient": clock.now - 10 * DAY})
        clock.now += constants.JOB_INDEX_TTL_S - 10  # still within the TTL
        st = await client.status()
        assert "ancient" not in {o.job_id for o in st["jobs"]}
        assert st["counts"]["queued"] == 3
        assert await r.zscore(constants.JOB_INDEX_ZSET_KEY, "ancient") is None

        clock.now += 20  # the first three are now older than the TTL
        new = await client.enqueue("c", [{"id": "b", "text": "y"}], job_size=1)
        members = [m.decode() for m in await r.zrange(constants.JOB_INDEX_ZSET_KEY, 0, -1)]
        assert members == new  # trimmed on enqueue
        assert constants.JOB_INDEX_TTL_S == 24 * 3600  # arq's keep_result default


async def test_status_counts_a_mix_with_real_arq_results(redis_server):
    clock = Clock(time.time())
    async with PoolqClient(redis_server.url, clock=clock) as client:
        ids = await client.enqueue("c", [{"id": str(i), "text": "t"} for i in range(7)], job_size=1)
        r = client.redis
        done, failed, running, queued = ids[:3], ids[3:5], ids[5:6], ids[6:]
        for j in done:
            await finish(r, j, True, {"documents": 1, "points": 2, "errors": []})
        for j in failed:
            await finish(r, j, False, ValueError("bad input"))
        await r.set(in_progress_key_prefix + running[0], b"1", px=60_000)
        # a job whose record is gone altogether (expired, lost)
        await r.zadd(constants.JOB_INDEX_ZSET_KEY, {"vanished": clock.now})

        for _ in range(2):  # the second time, the finished jobs come from the index's own sets
            st = await client.status()
            assert st["counts"] == {
                "queued": 1, "running": 1, "done": 3, "failed": 2, "not_found": 1, "deferred": 0,
            }  # fmt: skip
        by_id = {o.job_id: o for o in st["jobs"]}
        assert by_id[done[0]].status == "done" and by_id[done[0]].result["points"] == 2
        assert by_id[failed[0]].status == "failed"
        assert by_id[failed[0]].error == "ValueError: bad input"
        assert by_id[running[0]].status == "running" and by_id[queued[0]].status == "queued"

        # given ids: exactly those, in order
        st = await client.status([failed[1], done[2], "unknown"])
        assert [o.status for o in st["jobs"]] == ["failed", "done", "not_found"]
        assert st["counts"]["done"] == 1 and st["counts"]["failed"] == 1

        # the listing of all jobs is capped, newest first
        st = await client.status(limit=2)
        assert len(st["jobs"]) == 2 and sum(st["counts"].values()) == 8


async def test_a_legacy_plain_set_does_not_break_status(redis_server):
    async with PoolqClient(redis_server.url) as client:
        r = client.redis
        (live,) = await client.enqueue("c", [{"id": "a", "text": "x"}])
        await r.zrem(constants.JOB_INDEX_ZSET_KEY, live)
        await r.sadd(constants.LEGACY_JOB_INDEX_KEY, live, "long-gone-1", "long-gone-2")
        st = await client.status()
        assert st["counts"]["queued"] == 1 and st["counts"]["not_found"] == 0
        assert await r.exists(constants.LEGACY_JOB_INDEX_KEY) == 0  # migrated, then dropped
        assert await r.zscore(constants.JOB_INDEX_ZSET_KEY, live) is not None
        st = await client.status()
        assert st["counts"]["queued"] == 1


async def test_status_reads_in_batches_not_per_job(redis_server, monkeypatch):
    """Round trips to Redis do not grow with the number of jobs."""
    async with PoolqClient(redis_server.url) as client:
        r = client.redis
        now = time.time()
        async with r.pipeline(transaction=False) as p:
            for i in range(3000):
                job_id = f"job-{i}"
                p.zadd(constants.JOB_INDEX_ZSET_KEY, {job_id: now})
                if i % 3 == 0:
                    p.set(result_key_prefix + job_id, result_bytes(job_id, i % 2 == 0, {}))
            await p.execute()

        trips = []
        execute_command, pipeline_execute = r.execute_command, Pipeline.execute

        async def command(*args, **kwargs):
            trips.append(args[0])
            return await execute_command(*args, **kwargs)

        async def pipeline(self, *args, **kwargs):
            trips.append("pipeline")
            return await pipeline_execute(self, *args, **kwargs)

        monkeypatch.setattr(r, "execute_command", command)
        monkeypatch.setattr(Pipeline, "execute", pipeline)
        st = await client.status()
        assert st["counts"]["done"] == 500 and st["counts"]["failed"] == 500
        assert st["counts"]["not_found"] == 2000
        # a few per thousand jobs (read, file the finished ones), not one or two per job
        assert len(trips) < 25, trips
        trips.clear()
        st = await client.status([f"job-{i}" for i in range(3000)])
        assert st["counts"]["done"] == 500 and len(trips) < 10, trips


async def test_long_results_are_read_by_their_tail_and_in_full_when_it_does_not_parse(
    redis_server, monkeypatch
):
    """A result carries its job's documents: only its tail is read, unless the tail does not
    parse back to the outcome (then the whole result is read, and the outcome is the same)."""
    big_docs = [{"id": str(i), "text": "lorem ipsum " * 100} for i in range(8)]  # ~10 KB
    now_ms = int(time.time() * 1000)

    def long_result(job_id, success, result, **fields):
        data = {
            "t": 1, "f": constants.INGEST_JOB, "a": ["docs", big_docs], "k": {}, "et": now_ms,
            "s": success, "r": result, "st": now_ms, "ft": now_ms,
            "q": constants.INGEST_QUEUE, "id": job_id,
        }  # fmt: skip
        return serialize(fields.get("reorder", lambda d: d)(data))

    async with PoolqClient(redis_server.url) as client:
        r = client.redis
        by_tail = serialize_result(
            constants.INGEST_JOB, ("docs", big_docs), {}, 1, now_ms, True,
            {"documents": 8, "points": 9, "errors": []}, now_ms, now_ms, "by-tail",
            constants.INGEST_QUEUE, "by-tail", serializer=serialize,
        )  # fmt: skip
        outcome_first = ("s", "r", "st", "ft", "q", "id", "t", "f", "a", "k", "et")
        results = {
            "by-tail": by_tail,
            # the failure message holds the bytes of an outcome mark ("¡sár" in UTF-8)
            "false-mark": long_result("false-mark", False, ValueError("no ¡sár here")),
            # another layout: the outcome first, the documents last (the tail has no mark)
            "reordered": long_result(
                "reordered", True, {"points": 3}, reorder=lambda d: {k: d[k] for k in outcome_first}
            ),
            "pickled": pickle.dumps({"s": True, "r": {}, "a": big_docs}),
        }
        for job_id, raw in results.items():
            assert len(raw) > RESULT_TAIL_BYTES
            await r.set(result_key_prefix + job_id, raw)
        assert b"\xa1s\xc3\xa1r" in results["false-mark"][-200:]

        read_in_full = []
        mget = r.mget

        async def spy(keys, *args):
            read_in_full.extend(k.removeprefix(result_key_prefix) for k in keys)
            return await mget(keys, *args)

        monkeypatch.setattr(r, "mget", spy)
        st = await client.status(list(results))
        by_id = {o.job_id: o for o in st["jobs"]}
        assert by_id["by-tail"] == JobOutcome(
            "by-tail", "done", {"documents": 8, "points": 9, "errors": []}
        )
        assert by_id["false-mark"] == JobOutcome(
            "false-mark", "failed", None, "ValueError: no ¡sár here"
        )
        assert by_id["reordered"] == JobOutcome("reordered", "done", {"points": 3})
        assert by_id["pickled"].status == "failed" and "unreadable" in by_id["pickled"].error
        assert sorted(read_in_full) == ["false-mark", "pickled", "reordered"]
        for job_id in results:  # the tail reading agrees with arq's own reading of the whole
            assert by_id[job_id] == finished_outcome(job_id, results[job_id])
        waited = await client.wait(list(results), timeout_s=5)
        assert [o.status for o in waited] == ["done", "failed", "done", "failed"]
