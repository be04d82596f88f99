"""``poolq status`` with 100,000 jobs in the index, on a real local Redis.

    python benchmarks/bench_status.py [--jobs N] [--doc-bytes B] [--bound S]

Fills the job index with ``--jobs`` entries enqueued within the last day (pipelines), in a mix
written the way arq writes it: done and failed jobs with real arq results (poolq's msgpack
serializer; each result carries its job's documents, ``--doc-bytes`` of text, as arq's results
do), running jobs (in-progress keys), queued and deferred jobs (the arq queue), and jobs whose
records are gone (expired or lost). Another 10 % of entries are older than the index's TTL:
status must drop them. Then it times ``PoolqClient.status()``:

* ``cold``: the first status, which reads every job once (the tail of each result) and files
  the finished ones;
* ``warm``: the next one (finished jobs are then a ZCARD);
* ``after``: once 1 % more jobs have finished meanwhile.

Requirement: each of the three within ``--bound`` seconds (default 2 s), with exact counts.
Exit status 1 otherwise. (Before the sorted-set index, status made one round trip per job ever
enqueued: 48 s for 100,000 jobs on the 2-core machine this was written on.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arq.constants import in_progress_key_prefix, job_key_prefix, result_key_prefix
from arq.jobs import serialize_result

from poolq.ingest.client import PoolqClient
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.wire import constants
from poolq.worker.wire.serialization import serialize

# share of the index in each state (the rest: records gone)
MIX = {"done": 0.40, "failed": 0.10, "running": 0.05, "queued": 0.25, "deferred": 0.05}
PIPELINE = 5000


def kind_of(i: int, n: int) -> str:
    edge = 0.0
    for kind, share in MIX.items():
        edge += share
        if i < edge * n:
            return kind
    return "not_found"


def result(job_id: str, kind: str, docs: list[dict[str, str]], now_ms: int) -> bytes:
    ok = kind == "done"
    outcome = {"documents": len(docs), "points": 2 * len(docs), "errors": []} if ok else (
        ValueError("document 'x': text: empty")
    )  # fmt: skip
    data = serialize_result(
        constants.INGEST_JOB, ("docs", docs), {}, 1, now_ms - 60_000, ok, outcome,
        now_ms - 30_000, now_ms - 29_000, job_id, constants.INGEST_QUEUE, job_id,
        serializer=serialize,
    )  # fmt: skip
    assert data is not None
    return data


async def fill(client: PoolqClient, n: int, doc_bytes: int, now: float) -> dict[str, int]:
    r = client.redis
    docs = [
        {"id": f"doc-{k}", "text": "lorem ipsum " * (doc_bytes // 8 // 12 + 1)} for k in range(8)
    ]
    now_ms = int(now * 1000)
    expected = dict.fromkeys((*MIX, "not_found"), 0)
    for start in range(0, n, PIPELINE):
        async with r.pipeline(transaction=False) as p:
            index: dict[str, float] = {}
            for i in range(start, min(n, start + PIPELINE)):
                job_id = f"bench-{i:06d}"
                kind = kind_of(i, n)
                expected[kind] += 1
                index[job_id] = now - 23 * 3600 * (i % 997) / 997  # within the last day
                if kind in ("done", "failed"):
                    p.set(result_key_prefix + job_id, result(job_id, kind, docs, now_ms), ex=86400)
                elif kind in ("running", "queued", "deferred"):
                    score = now_ms + 3_600_000 if kind == "deferred" else now_ms - 1000
                    p.zadd(constants.INGEST_QUEUE, {job_id: score})
                    p.set(job_key_prefix + job_id, b"job", ex=86400)
                    if kind == "running":
                        p.set(in_progress_key_prefix + job_id, b"1", ex=3600)
            p.zadd(constants.JOB_INDEX_ZSET_KEY, index)
            # and entries from before the TTL, which status drops
            p.zadd(
                constants.JOB_INDEX_ZSET_KEY,
                {f"stale-{i:06d}": now - 2 * 86400 for i in range(start, start + len(index) // 10)},
            )
            await p.execute()
    return expected


async def finish_some(client: PoolqClient, n: int, doc_bytes: int) -> None:
    """``n`` queued jobs finish, the way arq records it."""
    r = client.redis
    queued = [
        m.decode() for m in await r.zrangebyscore(constants.INGEST_QUEUE, 0, time.time() * 1000)
    ]
    queued = [j for j in queued if not await r.exists(in_progress_key_prefix + j)][:n]
    docs = [{"id": "d", "text": "x" * doc_bytes}]
    now_ms = int(time.time() * 1000)
    async with r.pipeline(transaction=False) as p:
        for job_id in queued:
            p.set(result_key_prefix + job_id, result(job_id, "done", docs, now_ms), ex=86400)
            p.zrem(constants.INGEST_QUEUE, job_id)
            p.delete(job_key_prefix + job_id)
        await p.execute()


async def timed_status(client: PoolqClient) -> tuple[float, dict[str, int]]:
    t0 = time.perf_counter()
    st = await client.status()
    return time.perf_counter() - t0, st["counts"]


async def run(url: str, n: int, doc_bytes: int) -> dict[str, object]:
    async with PoolqClient(url) as client:
        t0 = time.perf_counter()
        expected = await fill(client, n, doc_bytes, time.time())
        fill_s = time.perf_counter() - t0
        info = await client.redis.info("memory")
        cold_s, cold = await timed_status(client)
        warm_s, warm = await timed_status(client)
        moved = n // 100
        await finish_some(client, moved, doc_bytes)
        after_s, after = await timed_status(client)
    expected_after = dict(
        expected, queued=expected["queued"] - moved, done=expected["done"] + moved
    )
    return {
        "jobs": n,
        "stale_entries_dropped": n // 10,
        "doc_bytes_per_result": doc_bytes,
        "redis_used_memory_mb": round(int(info["used_memory"]) / 2**20, 1),
        "fill_s": round(fill_s, 2),
        "cold_s": round(cold_s, 3),
        "warm_s": round(warm_s, 3),
        "after_s": round(after_s, 3),
        "counts_ok": cold == expected and warm == expected and after == expected_after,
        "counts": cold,
        "expected": expected,
        "counts_after": after,
        "expected_after": expected_after,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--doc-bytes", type=int, default=3000, help="document text per result")
    ap.add_argument("--bound", type=float, default=2.0, help="seconds each status may take")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LocalRedis(Path(tmp) / "redis") as server:
        out = asyncio.run(run(server.url, args.jobs, args.doc_bytes))
    worst = max(float(out["cold_s"]), float(out["warm_s"]), float(out["after_s"]))  # type: ignore[arg-type]
    out["bound_s"] = args.bound
    out["ok"] = bool(out["counts_ok"]) and worst <= args.bound
    print(json.dumps(out, indent=2))
    print(
        f"status() at {args.jobs:,} jobs: cold {out['cold_s']}s, warm {out['warm_s']}s, "
        f"after 1% finished {out['after_s']}s (bound {args.bound}s); counts "
        f"{'exact' if out['counts_ok'] else 'WRONG'}: {'ok' if out['ok'] else 'FAILED'}"
    )
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
