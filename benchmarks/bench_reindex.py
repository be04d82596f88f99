"""Reindex cost: an incremental reindex with 0% and 10% of the documents changed, against a
full rebuild (new collection + alias switch) of the same corpus, in the same run, through a
real worker (Redis -> `poolq worker` -> embedded Qdrant).

    python benchmarks/bench_reindex.py [--docs N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.wire.records.reindex import ReindexSummary
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

COLLECTION = "bench"


def write_source(path: Path, docs: list[dict]) -> None:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))


async def reindex(url: str, source: Path, full: bool = False) -> tuple[float, ReindexSummary]:
    async with PoolqClient(url) as client:
        t0 = time.perf_counter()
        job_id = await client.reindex(str(source), COLLECTION, full=full)
        (outcome,) = await client.wait([job_id], timeout_s=7200, poll_s=0.02, max_poll_s=0.1)
        elapsed = time.perf_counter() - t0
    if outcome.status != "done":
        raise SystemExit(f"reindex failed: {outcome.error}")
    if not isinstance(outcome.result, ReindexSummary):
        raise SystemExit(f"reindex did not run: {outcome.result}")
    return elapsed, outcome.result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=1000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="poolq-bench-reindex-"))
    docs = [
        {"id": f"doc-{i}", "text": t, "metadata": {"i": i}}
        for i, t in enumerate(passages(args.docs))
    ]
    source = tmp / "source.jsonl"
    write_source(source, docs)
    with LocalRedis(tmp / "redis") as server:
        env = {"POOLQ_SOURCE_ROOTS": str(tmp)}
        with WorkerProcess(server.url, tmp / "qdrant", env=env, log=tmp / "worker.log"):
            rows = []
            t, r = asyncio.run(reindex(server.url, source))
            rows.append(("first (all new)", t, r))
            t, r = asyncio.run(reindex(server.url, source))
            rows.append(("incremental, 0% changed", t, r))
            for d in docs[::10]:
                d["text"] += " Changed for the reindex benchmark."
            write_source(source, docs)
            t, r = asyncio.run(reindex(server.url, source))
            rows.append(("incremental, 10% changed", t, r))
            t, r = asyncio.run(reindex(server.url, source, full=True))
            rows.append(("full rebuild + alias switch", t, r))
    full_s = rows[-1][1]
    print(f"{args.docs} documents, {rows[0][2].points} chunks; one worker, embedded Qdrant")
    print(
        f"{'run':30s} {'seconds':>8s} {'vs full':>8s} {'encoded':>8s} {'written':>8s} {'unchanged':>9s}"
    )
    for name, t, r in rows:
        print(
            f"{name:30s} {t:8.2f} {t / full_s:8.3f} {r.encoded_chunks:8d} "
            f"{r.points_written:8d} {r.unchanged:9d}"
        )


if __name__ == "__main__":
    main()
