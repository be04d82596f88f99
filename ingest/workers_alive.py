"""Is any worker alive on this Redis? (part of :mod:`poolq.ingest.client`).

A worker is alive while its heartbeat key (``poolq:worker:{id}``, refreshed every 2 s, expiring
after 10 s) exists and its record does not say ``"stopped": true`` (a worker that stopped
cleanly). A client asks while it waits on a search, and while ``enqueue --wait`` waits, so "no
worker" is answered at once instead of after a timeout. The workers are found from the set
they record themselves in (:func:`poolq.ingest.job_index.worker_records`, no SCAN); only when
that finds none alive are the heartbeat keys scanned (a worker that has just started and is
not listed yet is alive too).
"""

from __future__ import annotations

import time
from typing import Any

from poolq.ingest.job_index import worker_records
from poolq.wire import constants
from poolq.wire.connection import describe_address
from poolq.wire.records.heartbeat import Heartbeat, read_heartbeat

# keys per SCAN step (arq's results share the keyspace: it grows with the jobs of the last day)
SCAN_COUNT = 1000


class NoWorkerError(TimeoutError):
    """No worker is running on this Redis (a ``TimeoutError``: what waiting would have ended in)."""


def no_worker_message(redis_url: str) -> str:
    return (
        f"no worker is running on this Redis ({describe_address(redis_url)}); "
        "start one with `poolq worker`"
    )


async def heartbeats(redis: Any) -> list[Heartbeat]:
    """Every worker's heartbeat (stopped ones included), by worker id, by SCAN (a value that is
    no heartbeat poolq wrote is no worker)."""
    keys = [k async for k in redis.scan_iter(match=constants.HEARTBEAT_PATTERN, count=SCAN_COUNT)]
    raws = list(await redis.mget(keys)) if keys else []
    out = [h for raw in raws if (h := read_heartbeat(raw)) is not None]
    return sorted(out, key=lambda w: w.worker_id)


async def live_workers(redis: Any) -> list[Heartbeat]:
    records, _ = await worker_records(redis, now=time.time())
    live = [r for r in records if r.alive]
    return live or [h for h in await heartbeats(redis) if h.alive]
