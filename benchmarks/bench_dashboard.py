"""The dashboard under load, on a real local Redis: page render times and Redis commands per
live tick with a big backlog, and the dashboard's share of Redis' commands while a real worker
ingests.

    python benchmarks/bench_dashboard.py [--queued N] [--done N] [--dead N] [--workers N]
                                         [--ingest-docs N]

1. Writes the records as the client and the workers write them: ``--queued`` jobs enqueued by
   ``PoolqClient.enqueue`` (default 10,000), ``--done`` finished jobs (the job index's writer,
   1,000), ``--dead`` dead letters (the worker's dead-letter writer, 200) and ``--workers``
   heartbeats with running jobs (8). Then, through the application in this process (its ASGI
   interface, one Redis connection), counts the Redis commands of the live tick (the
   overview's ``<main>``, what the page fetches every second) from ``INFO commandstats``
   before and after: the first tick (every part read: the most a tick costs) and the mean of
   ``--ticks`` ticks as far apart as the page fetches them (parts refreshed at their own pace: ``live.py``); and times
   each page (the median of 5 renders, server side: from the request to the last byte).
2. On a fresh Redis, starts a real ``poolq worker``, enqueues ``--ingest-docs`` documents, and
   while they are ingested polls the overview as an open overview page does (every ``REFRESH_S``);
   the worker's commands are every command Redis counted meanwhile less the dashboard's (its
   ticks times the mean of step 1, measured with live workers and running jobs as here).

Requirements: every page within 150 ms; a tick within 20 commands; the dashboard under 1 % of
the worker's commands. Exit status 1 on a miss.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from starlette.testclient import TestClient

from poolq.ingest.client import PoolqClient
from poolq.ingest.dashboard.app import create_app
from poolq.ingest.dashboard.pages import REFRESH_S
from poolq.ingest.sample_corpus import passages
from poolq.wire import constants
from poolq.wire.job_plan import Limits
from poolq.wire.records.heartbeat import Heartbeat
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.reliability import dead_letter, job_records

PAGE_BOUND_MS, TICK_BOUND, LOAD_BOUND = 150.0, 20, 0.01
EVERY_S = REFRESH_S["overview"]  # how often an open overview page fetches its tick


async def seed(url: str, queued: int, done: int, dead: int, workers: int) -> list[str]:
    async with PoolqClient(url) as c:
        docs = [{"id": f"q{i}", "text": "a queued document"} for i in range(queued)]
        ids = await c.enqueue("docs", docs, job_size=1, limits=Limits(), priority="bulk")
        result = {"points": 4, "documents": 4, "errors": [], "skipped": 0, "seconds": 0.2}
        async with c.redis.pipeline(transaction=False) as p:
            for i in range(done):
                job_records.add_outcome(p, f"done-{i}", success=True, result=result)
            await p.execute()
        for i in range(dead):
            docs = [{"id": f"dl{i}-{k}", "text": "x"} for k in range(4)]
            await dead_letter.record(
                c.redis, f"dead-{i}", constants.INGEST_JOB, ["docs", docs], {}, ValueError("bad"), 5
            )
        for w in range(workers):
            beat = Heartbeat(
                worker_id=f"bench-{w}",
                pid=w,
                host="bench",
                seen_at=time.time(),
                engines={"dense": {"batches": 9, "mean_batch_tokens": 900.0, "queued_tokens": 50}},
                device="cpu",
                backend="torch",
                max_batch_tokens=2048,
            )
            await c.redis.set(constants.HEARTBEAT_KEY.format(worker_id=f"bench-{w}"), beat.pack())
            await job_records.worker_seen(c.redis, f"bench-{w}")
            running = ids[w * 4 : w * 4 + 4]  # 4 jobs each, running
            await c.redis.sadd(constants.WORKER_JOBS_KEY.format(worker_id=f"bench-{w}"), *running)
        return ids


def commands(tc: TestClient) -> int:
    """Every command Redis has counted so far (``INFO commandstats``), this INFO excluded."""
    return stats(tc)[0]


def stats(tc: TestClient) -> tuple[int, int]:
    """Commands Redis has counted so far, and the microseconds it spent in them."""
    info: dict[str, Any] = tc.portal.call(_info, tc)  # type: ignore[union-attr]
    rows = [v for k, v in info.items() if k.startswith("cmdstat_")]
    return sum(int(v["calls"]) for v in rows), sum(int(v["usec"]) for v in rows)


async def _info(tc: TestClient) -> dict[str, Any]:
    redis = tc.app.app.state.client.redis  # type: ignore[attr-defined]
    info: dict[str, Any] = await redis.info("commandstats")
    return info


def per_tick(tc: TestClient, path: str) -> int:
    before = commands(tc)
    assert tc.get(path).status_code == 200
    return commands(tc) - before - 1  # (the first INFO is counted by the second)


def page_times(tc: TestClient, job_id: str) -> dict[str, float]:
    pages = ["/", "/jobs", f"/jobs/{job_id}", "/workers", "/dlq", "/reindex", "/search"]
    out = {}
    for path in pages:
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            r = tc.get(path)
            times.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200, (path, r.status_code)
        out[path] = round(statistics.median(times), 1)
    return out


def mean_tick(tc: TestClient, ticks: int) -> tuple[float, float]:
    """Commands a tick and Redis' microseconds in them, on average over ``ticks`` ticks
    ``REFRESH_S`` apart."""
    n0, us0 = stats(tc)
    for _ in range(ticks):
        t0 = time.monotonic()
        assert tc.get("/?part=main").status_code == 200
        time.sleep(max(0.0, EVERY_S - (time.monotonic() - t0)))
    n1, us1 = stats(tc)
    return (n1 - n0 - 1) / ticks, (us1 - us0) / ticks


def under_load(
    folder: Path, n_docs: int, tick_cost: float, tick_us: float
) -> tuple[float, int, int, float, int]:
    """(the dashboard's commands, the worker's, ticks, and the same in Redis' microseconds)
    while a worker ingests ``n_docs``."""
    from poolq.worker.dev.local_worker import WorkerProcess

    with LocalRedis(folder / "redis2") as redis, WorkerProcess(redis.url, folder / "qdrant"):
        app = create_app(redis.url)
        with TestClient(app, base_url="http://127.0.0.1") as tc:

            async def enqueue() -> list[str]:
                async with PoolqClient(redis.url) as c:
                    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(passages(n_docs))]
                    return await c.enqueue("load", docs, job_size=20)

            tc.portal.call(enqueue)  # type: ignore[union-attr]
            (start, start_us), ticks = stats(tc), 0
            while True:
                t0 = time.monotonic()
                html = tc.get("/?part=main").text
                ticks += 1
                # ended once the page shows nothing queued or running (no command of its own)
                if ticks > 2 and all(f'id="{k}">0<' in html for k in ("depth", "running")):
                    break
                time.sleep(max(0.0, EVERY_S - (time.monotonic() - t0)))
            end, end_us = stats(tc)
            mine, mine_us = ticks * tick_cost, ticks * tick_us
            worker = max(1, round(end - start - 1 - mine))
            return mine, worker, ticks, mine_us, max(1, round(end_us - start_us - mine_us))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queued", type=int, default=10_000)
    ap.add_argument("--done", type=int, default=1_000)
    ap.add_argument("--dead", type=int, default=200)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--ingest-docs", type=int, default=2_000)
    ap.add_argument("--ticks", type=int, default=20)
    args = ap.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with LocalRedis(folder / "redis") as redis:
            t0 = time.perf_counter()
            ids = asyncio.run(seed(redis.url, args.queued, args.done, args.dead, args.workers))
            print(
                f"seeded {args.queued} queued, {args.done} done, {args.dead} dead letters, "
                f"{args.workers} workers in {time.perf_counter() - t0:.1f}s"
            )
            with TestClient(create_app(redis.url, token="t"), base_url="http://127.0.0.1") as tc:
                first = per_tick(tc, "/?part=main")
                ok &= first <= TICK_BOUND
                print(
                    f"tick, first (every part read)  {first:5d} commands ({first / TICK_BOUND:.2f} of {TICK_BOUND}){'  MISS' if first > TICK_BOUND else ''}"
                )
                tick_cost, tick_us = mean_tick(tc, args.ticks)
                print(
                    f"tick, mean of {args.ticks}, {EVERY_S:g} s apart     {tick_cost:5.1f} commands, "
                    f"{tick_us:.0f} us of Redis time"
                )
                for path, ms in page_times(tc, ids[-1]).items():
                    miss = ms > PAGE_BOUND_MS
                    ok &= not miss
                    print(
                        f"page {path:<40} {ms:7.1f} ms  ({ms / PAGE_BOUND_MS:.2f} of {PAGE_BOUND_MS:g} ms){'  MISS' if miss else ''}"
                    )
                jobs_tick = per_tick(tc, "/jobs?part=main")
                print(
                    f"the jobs page's refresh (100 rows): {jobs_tick} commands (every 2 s; bounded by the rows shown)"
                )
        mine, worker, ticks, mine_us, worker_us = under_load(
            folder, args.ingest_docs, tick_cost, tick_us
        )
        ratio = mine / worker
        ok &= ratio < LOAD_BOUND
        print(
            f"under load: dashboard {mine:.0f} commands in {ticks} ticks, worker {worker}: "
            f"{100 * ratio:.2f} % (bound {100 * LOAD_BOUND:g} %){'  MISS' if ratio >= LOAD_BOUND else ''}"
        )
        print(
            f"under load, Redis time: dashboard {mine_us / 1000:.1f} ms, worker "
            f"{worker_us / 1000:.1f} ms: {100 * mine_us / worker_us:.2f} % (for information)"
        )
    print("OK" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
