"""The overview: one live tick of the dashboard, in a fixed number of Redis commands whatever
the number of jobs (no KEYS, no SCAN, no read of any job): three round trips, at most 19
commands (``benchmarks/bench_dashboard.py`` counts them).

* queue depth per lane: the ingest queue's interactive jobs (scored ahead of every bulk job,
  ``wire/placement.py``), its bulk jobs, the parse queue, and the deferred jobs of both (due
  later: retries waiting out their backoff), less the running jobs arq keeps in its queue;
* jobs by status: queued, running (the live workers' job lists), done, failed and cancelled
  within the job index's TTL, and the dead letters;
* workers alive, and the charts' time series (``wire/series.py``), each metric's ring read
  whole (at most ``2 * SERIES_SLOTS`` fields).
"""

from __future__ import annotations

from typing import Any

from poolq.ingest.job_index import WORKERS_LISTED_S
from poolq.wire import constants
from poolq.wire.records.heartbeat import read_heartbeat
from poolq.wire.series import COUNTERS, METRICS, read_ring, series_key

INGEST, PARSE = constants.INGEST_QUEUE, constants.PARSE_QUEUE
RATE_WINDOW_S = 60  # documents and chunks a second: over the last minute's full steps


def _text(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


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


async def overview(redis: Any, *, now: float) -> dict[str, Any]:
    """The overview's map (``GET /api/overview``): ``lanes`` (queue depth per lane),
    ``counts`` (jobs by status), ``workers_alive``, ``workers_seen``, ``rates`` and
    ``series`` (metric -> ``[unix seconds, value]`` of the last hour)."""
    now_ms = round(now * 1000)
    head = now_ms - constants.INTERACTIVE_HEAD_START_MS  # interactive jobs score at or below
    cutoff = now - constants.JOB_INDEX_TTL_S
    async with redis.pipeline(transaction=False) as p:
        p.zcount(INGEST, "-inf", head)
        p.zcount(INGEST, f"({head}", now_ms)
        p.zcount(INGEST, f"({now_ms}", "+inf")
        p.zcount(PARSE, "-inf", now_ms)
        p.zcount(PARSE, f"({now_ms}", "+inf")
        for key in (
            constants.JOB_INDEX_DONE_KEY,
            constants.JOB_INDEX_FAILED_KEY,
            constants.JOB_INDEX_CANCELLED_KEY,
        ):
            p.zcount(key, cutoff, "+inf")
        p.hlen(constants.DEAD_LETTER_KEY)
        p.zrangebyscore(constants.WORKER_LAST_SEEN_KEY, now - WORKERS_LISTED_S, "+inf")
        for metric in METRICS:
            p.hgetall(series_key(metric))
        r = await p.execute()
    interactive, bulk, deferred, parse, parse_later = (int(x) for x in r[:5])
    done, failed, cancelled, dead = (int(x) for x in r[5:9])
    seen = [_text(w) for w in r[9]]
    series = {m: read_ring(raw, now) for m, raw in zip(METRICS, r[10:], strict=True)}
    beats = [constants.HEARTBEAT_KEY.format(worker_id=w) for w in seen]
    records = [
        h for raw in (await redis.mget(beats) if beats else []) if (h := read_heartbeat(raw))
    ]
    live = [h.worker_id for h in records if h.alive]
    running: list[str] = []
    if live:
        async with redis.pipeline(transaction=False) as p:
            p.sunion([constants.WORKER_JOBS_KEY.format(worker_id=w) for w in live])
            running_raw = (await p.execute())[0]
        running = sorted(_text(j) for j in running_raw)
    if running:  # running jobs stay in arq's queue until they end: not queued
        async with redis.pipeline(transaction=False) as p:
            p.zmscore(INGEST, running)
            p.zmscore(PARSE, running)
            in_ingest, in_parse = await p.execute()
        for s in in_ingest:
            if s is None:
                continue
            if s <= head:
                interactive -= 1
            elif s <= now_ms:
                bulk -= 1
            else:
                deferred -= 1
        for s in in_parse:
            if s is None:
                continue
            if s <= now_ms:
                parse -= 1
            else:
                parse_later -= 1
    lanes = {
        "interactive": max(0, interactive),
        "bulk": max(0, bulk),
        "parse": max(0, parse),
        "deferred": max(0, deferred) + max(0, parse_later),
    }
    return {
        "now": now,
        "lanes": lanes,
        "counts": {
            "queued": lanes["interactive"] + lanes["bulk"] + lanes["parse"],
            "deferred": lanes["deferred"],
            "running": len(running),
            "done": done,
            "failed": failed,
            "cancelled": cancelled,
            "dead_letters": dead,
        },
        "workers_alive": len(live),
        "workers_seen": len(records),
        "rates": rates(series, now),
        "series": {m: [[t, v] for t, v in pts] for m, pts in series.items()},
        "counters": list(COUNTERS),
    }
