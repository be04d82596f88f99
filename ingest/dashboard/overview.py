"""The overview: what the dashboard's live tick reads, in a fixed number of Redis commands
whatever the number of jobs (no KEYS, no SCAN, no read of any job), in three parts that
:class:`~.live.LiveOverview` refreshes at their own pace:

* :func:`queues`: queue depth per lane, the ingest queue's interactive jobs (scored ahead of
  every bulk job, ``wire/placement.py``), its bulk jobs, the parse queue, and the deferred
  jobs (due later, or interactive retries resting out their backoff), less the running jobs
  arq keeps in its queue (the live workers' job lists): at most 8 commands;
* :func:`counts`: done, failed and cancelled within the job index's TTL, the dead letters, the
  workers seen lately and their heartbeats: 6 commands;
* :func:`series`: the charts' rings (``wire/series.py``), each read whole (at most
  ``2 * SERIES_SLOTS`` fields): 5 commands.
"""

from __future__ import annotations

from typing import Any

from poolq.ingest.dashboard.jobs import FINISHED
from poolq.wire import constants
from poolq.wire.live_workers import WORKERS_LISTED_S
from poolq.wire.placement import due_ms, resting_scores
from poolq.wire.records.heartbeat import read_heartbeat
from poolq.wire.serialization import redis_text
from poolq.wire.series import COUNTERS, METRICS, read_ring, series_key

INGEST, PARSE = constants.INGEST_QUEUE, constants.PARSE_QUEUE
RATE_WINDOW_S = 60  # documents and chunks a second: over the last minute's full steps


def rates(series: dict[str, list[tuple[float, int]]], now: float) -> dict[str, float]:
    """Documents and chunks a second over the last :data:`RATE_WINDOW_S` of full steps."""
    step = constants.SERIES_STEP_S
    current = (now // step) * step  # (the step being written is not full yet)
    since = current - RATE_WINDOW_S
    out = {}
    for metric in ("documents", "chunks"):
        total = sum(v for t, v in series.get(metric, []) if since <= t < current)
        out[f"{metric}_per_s"] = round(total / RATE_WINDOW_S, 2)
    return out


async def counts(redis: Any, *, now: float) -> dict[str, Any]:
    """Jobs ended within the TTL by status, dead letters, and the live workers' ids."""
    cutoff = now - constants.JOB_INDEX_TTL_S
    async with redis.pipeline(transaction=False) as p:
        for key in FINISHED.values():  # done, failed, cancelled
            p.zcount(key, cutoff, "+inf")
        p.hlen(constants.DEAD_LETTER_KEY)
        p.zrangebyscore(constants.WORKER_LAST_SEEN_KEY, now - WORKERS_LISTED_S, "+inf")
        r = await p.execute()
    done, failed, cancelled, dead = (int(x) for x in r[:4])
    beats = [constants.HEARTBEAT_KEY.format(worker_id=redis_text(w)) for w in r[4]]
    records = [
        h for raw in (await redis.mget(beats) if beats else []) if (h := read_heartbeat(raw))
    ]
    return {
        "done": done,
        "failed": failed,
        "cancelled": cancelled,
        "dead_letters": dead,
        "live": [h.worker_id for h in records if h.alive],
        "seen": len(records),
    }


async def series(redis: Any, *, now: float) -> dict[str, list[tuple[float, int]]]:
    async with redis.pipeline(transaction=False) as p:
        for metric in METRICS:
            p.hgetall(series_key(metric))
        raws = await p.execute()
    return {m: read_ring(raw, now) for m, raw in zip(METRICS, raws, strict=True)}


async def queues(redis: Any, *, now: float, live: list[str]) -> dict[str, int]:
    """Queue depth per lane (interactive, bulk, parse, deferred) and ``running``."""
    now_ms = round(now * 1000)
    head = now_ms - constants.INTERACTIVE_HEAD_START_MS  # interactive jobs score at or below
    async with redis.pipeline(transaction=False) as p:
        p.zcount(INGEST, "-inf", head)
        p.zcount(INGEST, f"({head}", now_ms)
        p.zcount(INGEST, f"({now_ms}", "+inf")
        p.zcard(PARSE)
        p.zcount(INGEST, *resting_scores(now_ms))  # interactive, resting out a retry's backoff
        if live:
            p.sunion([constants.WORKER_JOBS_KEY.format(worker_id=w) for w in live])
        r = await p.execute()
    interactive, bulk, deferred, parse, resting = (int(x) for x in r[:5])
    bulk, deferred = bulk - resting, deferred + resting
    running = sorted(redis_text(j) for j in r[5]) if live else []
    if running:  # running jobs stay in arq's queue until they end: not queued
        async with redis.pipeline(transaction=False) as p:
            p.zmscore(INGEST, running)
            p.zmscore(PARSE, running)
            in_ingest, in_parse = await p.execute()
        for s in in_ingest:
            if s is not None:
                if due_ms(s, now_ms) > now_ms:
                    deferred -= 1
                elif s <= head:
                    interactive -= 1
                else:
                    bulk -= 1
        parse -= sum(s is not None for s in in_parse)
    return {
        "interactive": max(0, interactive),
        "bulk": max(0, bulk),
        "parse": max(0, parse),
        "deferred": max(0, deferred),
        "running": len(running),
    }


def assemble(
    now: float, lanes: dict[str, int], c: dict[str, Any], s: dict[str, list[tuple[float, int]]]
) -> dict[str, Any]:
    """The overview's map (``GET /api/overview``): ``lanes`` (queue depth per lane),
    ``counts`` (jobs by status), ``workers_alive``, ``workers_seen``, ``rates`` and
    ``series`` (metric -> ``[unix seconds, value]`` of the last hour)."""
    depth = {k: v for k, v in lanes.items() if k != "running"}
    return {
        "now": now,
        "lanes": depth,
        "counts": {
            "queued": depth["interactive"] + depth["bulk"] + depth["parse"],
            "deferred": depth["deferred"],
            "running": lanes["running"],
            "done": c["done"],
            "failed": c["failed"],
            "cancelled": c["cancelled"],
            "dead_letters": c["dead_letters"],
        },
        "workers_alive": len(c["live"]),
        "workers_seen": c["seen"],
        "rates": rates(s, now),
        "series": {m: [[t, v] for t, v in pts] for m, pts in s.items()},
        "counters": list(COUNTERS),
    }


async def overview(redis: Any, *, now: float) -> dict[str, Any]:
    """Every part read now (what one uncached tick costs: at most 18 commands)."""
    c = await counts(redis, now=now)
    s = await series(redis, now=now)
    return assemble(now, await queues(redis, now=now, live=c["live"]), c, s)
