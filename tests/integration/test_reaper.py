"""The reaper against a real Redis: jobs of dead workers and orphaned in-progress marks are
handed back; live workers' jobs, fresh marks and finished jobs' marks are left alone."""

import time

from arq.constants import in_progress_key_prefix, job_key_prefix, retry_key_prefix
from redis.asyncio import Redis

from poolq.wire import constants
from poolq.wire.dead_letters import entries
from poolq.wire.serialization import serialize
from poolq.worker.reliability.reaper import reap_dead_workers, reap_orphans

Q = constants.INGEST_QUEUE
TTL_MS = 3_600_000


async def test_dead_workers_jobs_are_handed_back_and_live_ones_kept(redis_server):
    r = Redis.from_url(redis_server.url)
    try:
        await r.set(constants.HEARTBEAT_KEY.format(worker_id="alive"), b"x", ex=60)
        await r.sadd(constants.WORKER_JOBS_KEY.format(worker_id="alive"), "j-live")
        await r.sadd(constants.WORKER_JOBS_KEY.format(worker_id="dead"), "j-dead", "j-last")
        for j in ("j-live", "j-dead", "j-last"):
            await r.psetex(in_progress_key_prefix + j, TTL_MS, b"1")
        await r.set(retry_key_prefix + "j-dead", b"1")
        await r.set(retry_key_prefix + "j-last", b"2")
        job = {"f": "ingest", "a": ["c", [{"id": "d", "text": "t"}]], "k": {}, "t": 1, "et": 0}
        await r.set(job_key_prefix + "j-last", serialize(job))
        await r.set(job_key_prefix + "j-dead", serialize(job))
        handed = await reap_dead_workers(r, {"ingest": 2})
        assert sorted(handed) == ["j-dead", "j-last"]
        assert await r.exists(in_progress_key_prefix + "j-live")
        assert not await r.exists(in_progress_key_prefix + "j-dead")
        assert not await r.exists(constants.WORKER_JOBS_KEY.format(worker_id="dead"))
        (entry,) = await entries(r)  # only the one on its last try
        assert entry.job_id == "j-last" and "died during the job's last try" in entry.error
    finally:
        await r.aclose()


async def test_orphaned_marks_are_handed_back_after_the_grace_period(redis_server):
    r = Redis.from_url(redis_server.url)
    now_ms = int(time.time() * 1000)
    try:
        for j in ("old", "fresh", "finished"):
            if j != "finished":
                await r.zadd(Q, {j: now_ms})
        await r.psetex(in_progress_key_prefix + "old", TTL_MS - 40_000, b"1")  # marked 40 s ago
        await r.psetex(in_progress_key_prefix + "fresh", TTL_MS - 1_000, b"1")  # 1 s ago
        await r.psetex(in_progress_key_prefix + "finished", TTL_MS - 40_000, b"1")  # cron-kept
        assert await reap_orphans(r, Q, TTL_MS, grace_s=30) == ["old"]
        assert await r.exists(in_progress_key_prefix + "fresh")
        assert await r.exists(in_progress_key_prefix + "finished")
    finally:
        await r.aclose()
