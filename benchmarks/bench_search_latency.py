"""Search latency while ingestion is backed up, against the same searches on an idle worker in
the same run (Redis -> `poolq worker` -> embedded Qdrant, client wall time).

    python benchmarks/bench_search_latency.py [--docs N] [--searches N] [--interval S]

Requirement: a search issued while 5,000 chunks of ingestion are queued returns within 1 second
plus its own model time. Per search, ``encode_s`` is the query's model time as the worker
measured it (from the engine request to its outputs, so it includes waiting for a forward pass
already running) and the overhead is ``wall - encode_s`` (Redis both ways, the worker's event
loop, the Qdrant call). The searches alternate rerank and hybrid, one at a time, every
``--interval`` seconds, first on the idle worker (after a warm-up), then right after enqueueing
``--docs`` documents (jobs of ``--job-size``). Before each search the pending ingest jobs are
read from the arq queue; once the backlog has drained, their chunk counts come from the job
results, which gives the exact number of chunks still queued when each search was issued.

Exit status 1 if the requirement is missed, or if the backlog drained before the last search
returned (the run then did not measure what it claims: raise ``--docs``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arq.constants import in_progress_key_prefix

from benchmarks.figures import save_run
from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.wire import constants
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

QUERIES = Path(__file__).resolve().parent / "search_queries.jsonl"
MODES = ("rerank", "hybrid")
SEARCHED = "search"  # the collection the searches run on
BACKLOG = "backlog"  # the collection the backlog writes
LIMIT_S = 1.0  # the requirement on wall - encode_s under backlog


@dataclass
class Sample:
    mode: str
    wall_s: float
    encode_s: float
    search_s: float
    pending_jobs: list[str] = field(default_factory=list)  # not finished when it was issued
    running_jobs: list[str] = field(default_factory=list)  # of which started

    @property
    def overhead_s(self) -> float:
        return self.wall_s - self.encode_s


def search_corpus() -> list[dict]:
    return [{"id": f"s-{i}", "text": t} for i, t in enumerate(passages(400))]


def backlog_docs(n: int) -> list[dict]:
    base = passages(n)  # about 2,000 distinct passages: repeat them, each copy distinct
    return [
        {"id": f"b-{i}", "text": (f"(copy {i // len(base)}) " if i >= len(base) else "") + t}
        for i, t in enumerate(base[i % len(base)] for i in range(n))
    ]


async def pending(client: PoolqClient) -> tuple[list[str], list[str]]:
    """Ingest jobs not finished (still in arq's queue) and, of those, the started ones."""
    ids = [j.decode() for j in await client.redis.zrange(constants.INGEST_QUEUE, 0, -1)]
    if not ids:
        return [], []
    async with client.redis.pipeline(transaction=False) as pipe:
        for j in ids:
            pipe.exists(in_progress_key_prefix + j)
        flags = await pipe.execute()
    return ids, [j for j, f in zip(ids, flags, strict=True) if f]


async def searches(
    client: PoolqClient, queries: list[str], n: int, interval_s: float, watch: bool
) -> list[Sample]:
    out = []
    start = time.perf_counter()
    for i in range(n):
        delay = start + i * interval_s - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        jobs, running = await pending(client) if watch else ([], [])
        mode = MODES[i % len(MODES)]
        t0 = time.perf_counter()
        res = await client.search(queries[i % len(queries)], SEARCHED, mode=mode, timeout_s=300)
        wall = time.perf_counter() - t0
        out.append(Sample(mode, wall, res.encode_s, res.search_s, jobs, running))
    return out


async def run(redis_url: str, args: argparse.Namespace) -> dict:
    queries = [json.loads(line)["query"] for line in QUERIES.read_text().splitlines() if line]
    async with PoolqClient(redis_url) as client:
        ids = await client.enqueue(SEARCHED, search_corpus(), job_size=args.job_size)
        await client.wait(ids)
        for q in queries[:4]:  # warm-up, not measured
            for mode in MODES:
                await client.search(q, SEARCHED, mode=mode)
        idle = await searches(client, queries, args.searches, args.interval, watch=False)

        docs = backlog_docs(args.docs)
        t0 = time.perf_counter()
        ids = await client.enqueue(BACKLOG, docs, job_size=args.job_size)
        enqueue_s = time.perf_counter() - t0
        busy = await searches(client, queries, args.searches, args.interval, watch=True)
        after, after_running = await pending(client)
        outcomes = await client.wait(ids, timeout_s=3600, max_poll_s=2.0)
        drain_s = time.perf_counter() - t0
    bad = [o for o in outcomes if o.status != "done" or o.result is None or o.result.errors]
    if bad:
        raise SystemExit(f"{len(bad)} backlog jobs failed or reported errors: {bad[:2]}")
    chunks = {o.job_id: o.result.points for o in outcomes if o.result is not None}
    return {
        "idle": idle,
        "busy": busy,
        "chunks": chunks,
        "docs": len(docs),
        "after": after,
        "after_running": after_running,
        "enqueue_s": enqueue_s,
        "drain_s": drain_s,
    }


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def table(title: str, idle: list[Sample], busy: list[Sample]) -> None:
    print(f"\n{title} ({len(idle)} idle, {len(busy)} under backlog), ms")
    print(
        f"{'':22s} {'idle p50':>9s} {'idle p95':>9s} {'backlog p50':>12s} {'backlog p95':>12s} "
        f"{'ratio p50':>10s} {'ratio p95':>10s}"
    )
    rows = [
        ("wall", lambda s: s.wall_s),
        ("encode_s (model)", lambda s: s.encode_s),
        ("wall - encode_s", lambda s: s.overhead_s),
        ("  of which search_s", lambda s: s.search_s),
    ]
    for name, get in rows:
        i = [get(s) for s in idle]
        b = [get(s) for s in busy]
        i50, i95, b50, b95 = pct(i, 50), pct(i, 95), pct(b, 50), pct(b, 95)
        print(
            f"{name:22s} {1e3 * i50:9.1f} {1e3 * i95:9.1f} {1e3 * b50:12.1f} {1e3 * b95:12.1f} "
            f"{b50 / i50 if i50 else float('nan'):10.2f} {b95 / i95 if i95 else float('nan'):10.2f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=8000, help="documents in the backlog")
    ap.add_argument("--searches", type=int, default=30, help="searches per condition")
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between searches")
    ap.add_argument("--job-size", type=int, default=32)
    ap.add_argument("--figures", type=Path, help="write the run's JSON and its plot here")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="poolq-bench-search-"))
    with (
        LocalRedis(tmp / "redis") as redis_server,
        WorkerProcess(redis_server.url, tmp / "qdrant", log=tmp / "worker.log"),
    ):
        r = asyncio.run(run(redis_server.url, args))
    idle, busy, chunks = r["idle"], r["busy"], r["chunks"]
    total = sum(chunks.values())
    queued = [sum(chunks[j] for j in s.pending_jobs) for s in busy]
    not_started = [
        sum(chunks[j] for j in s.pending_jobs if j not in set(s.running_jobs)) for s in busy
    ]
    left = sum(chunks[j] for j in r["after"])
    print(
        f"backlog: {r['docs']} documents in {len(chunks)} jobs of {args.job_size}, "
        f"{total} chunks, enqueued in {r['enqueue_s']:.2f}s, drained in {r['drain_s']:.1f}s "
        f"({total / r['drain_s']:.1f} chunks/s)"
    )
    print(
        f"chunks queued (not finished) when the searches were issued: first {queued[0]}, "
        f"last {queued[-1]}, min {min(queued)}; not yet started: first {not_started[0]}, "
        f"last {not_started[-1]}, min {min(not_started)}"
    )
    print(
        f"when the last search returned: {len(r['after'])} jobs ({left} chunks) still queued, "
        f"{len(r['after_running'])} running -> backlog "
        f"{'non-empty' if r['after'] else 'EMPTY (raise --docs)'}"
    )
    if min(queued) < 5000:
        print(f"note: fewer than 5,000 chunks queued at some search (min {min(queued)})")
    print(
        f"searches: {args.searches} per condition, {' and '.join(MODES)} alternating, one every "
        f"{args.interval}s, limit 10, on a {len(search_corpus())}-document collection"
    )
    table("all searches", idle, busy)
    for mode in MODES:
        table(
            f"{mode} only", [s for s in idle if s.mode == mode], [s for s in busy if s.mode == mode]
        )
    over = [s.overhead_s for s in busy]
    held = max(over) < LIMIT_S
    print(
        f"\nrequirement: wall - encode_s under backlog < 1 s: max {max(over):.3f}s, "
        f"p95 {pct(over, 95):.3f}s, p50 {pct(over, 50):.3f}s -> {'ok' if held else 'MISS'}"
    )
    misses = [] if held else [f"wall - encode_s under backlog: max {max(over):.3f}s >= 1 s"]
    for mode in MODES:
        o = [s.overhead_s for s in busy if s.mode == mode]
        print(
            f"  {mode:7s} max {max(o):.3f}s p95 {pct(o, 95):.3f}s "
            f"-> {'ok' if max(o) < LIMIT_S else 'MISS'}"
        )
    if args.figures:
        walls = {c: {m: [x.wall_s for x in v if x.mode == m] for m in MODES}
                 for c, v in (("idle", idle), ("busy", busy))}  # fmt: skip
        save_run(args.figures, "search-latency", {
            "modes": list(MODES), **walls, "chunks": total,
            "drain_chunks_s": total / r["drain_s"], "min_queued_chunks": min(queued),
        })  # fmt: skip
    if not r["after"]:  # the last searches may have found no backlog left: not measured
        misses.append("the backlog drained before the last search returned (raise --docs)")
    if misses:
        print(f"MISS: {'; '.join(misses)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
