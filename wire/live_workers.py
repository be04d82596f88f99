"""The workers alive on a Redis, read from the heartbeats they write (the client's status,
waits and job plans, and a parse job's hand-on, which plans its ingest jobs for the live
encode workers' limits).

A worker is alive while its heartbeat key (``poolq:worker:{id}``, refreshed every 2 s, expiring
after 10 s) exists and its record does not say ``"stopped": true`` (a worker that stopped
cleanly). The workers are found from the set they record themselves in
(``WORKER_LAST_SEEN_KEY``, no SCAN); only when that finds none alive are the heartbeat keys
scanned (a worker that has just started and is not listed yet is alive too).
"""

from __future__ import annotations

import time
from typing import Any

from poolq.wire import constants
from poolq.wire.records.heartbeat import Heartbeat, read_heartbeat
from poolq.wire.serialization import redis_text

# a stopped worker's final heartbeat lives 20 heartbeat TTLs: look for workers seen since then
WORKERS_LISTED_S = 20 * constants.HEARTBEAT_TTL_S + 30


async def worker_records(redis: Any, *, now: float) -> tuple[list[Heartbeat], float | None]:
    """The heartbeats of the workers seen lately (stopped ones included while their final
    heartbeat lasts), by worker id, and when a worker was last seen (None: never)."""
    seen_key = constants.WORKER_LAST_SEEN_KEY
    async with redis.pipeline(transaction=False) as p:
        p.zrangebyscore(seen_key, now - WORKERS_LISTED_S, "+inf")
        p.zrevrange(seen_key, 0, 0, withscores=True)
        ids, newest = await p.execute()
    keys = [constants.HEARTBEAT_KEY.format(worker_id=redis_text(w)) for w in ids]
    raws = await redis.mget(keys) if keys else []
    records = [h for raw in raws if (h := read_heartbeat(raw)) is not None]
    seen = [s for _, s in newest] + [r.seen_at for r in records if r.seen_at is not None]
    return sorted(records, key=lambda r: r.worker_id), max(seen, default=None)


async def heartbeats(redis: Any) -> list[Heartbeat]:
    """Every worker's heartbeat (stopped ones included), by worker id, by SCAN (a value that is
    no heartbeat poolq wrote is no worker)."""
    keys = [
        k
        async for k in redis.scan_iter(
            match=constants.HEARTBEAT_PATTERN, count=constants.SCAN_COUNT
        )
    ]
    raws = list(await redis.mget(keys)) if keys else []
    out = [h for raw in raws if (h := read_heartbeat(raw)) is not None]
    return sorted(out, key=lambda w: w.worker_id)


async def live_workers(redis: Any) -> list[Heartbeat]:
    records, _ = await worker_records(redis, now=time.time())
    live = [r for r in records if r.alive]
    return live or [h for h in await heartbeats(redis) if h.alive]
