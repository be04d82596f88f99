"""Re-enqueueing documents a collection already holds unchanged, against ingesting them the
first time, through one real worker (Redis -> `poolq worker` -> embedded Qdrant), in the same
run: the unchanged ones are skipped on their stored hashes, with no model work and no writes.

    python benchmarks/bench_ingest_skip.py [--docs 199] [--rounds 3]

The documents are ingested once (``first``), then enqueued again unchanged ``--rounds`` times
(``unchanged``, the best round). Per run: wall seconds from the enqueue to the job's end, and the
worker's CPU ms per document (its process and children, ``/proc``); with the 1-minute load at
the start and the CPU steal over it. tests/integration/test_ingest_skip.py checks that nothing
was encoded or written, by the worker's counters.

Target (exit 1 on a miss): unchanged / first <= ``--target`` in CPU ms per document (default
0.05).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.procs import machine_state, process_cpu_s
from poolq.ingest.client import PoolqClient
from poolq.wire.records.results import IngestResult
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.integration.test_reliability import corpus

COLLECTION = "docs"


async def ingest(url: str, docs: list[dict]) -> IngestResult:
    async with PoolqClient(url) as client:
        ids = await client.enqueue(COLLECTION, docs, job_size=len(docs))
        (outcome,) = await client.wait(ids, timeout_s=1800, poll_s=0.02, max_poll_s=0.1)
    if outcome.status != "done" or not isinstance(outcome.result, IngestResult):
        raise SystemExit(f"the ingest job did not end done: {outcome.error}")
    return outcome.result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=199)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--target", type=float, default=0.05)
    args = ap.parse_args()
    docs = corpus(args.docs)
    rows: dict[str, tuple[float, float, IngestResult]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="poolq-bench-ingest-skip-"))
    with (
        machine_state() as state,
        LocalRedis(tmp / "redis") as server,
        WorkerProcess(server.url, tmp / "qdrant", log=tmp / "worker.log") as worker,
    ):
        assert worker.proc is not None
        for name in ["first"] + ["unchanged"] * args.rounds:
            cpu0, t0 = process_cpu_s(worker.proc.pid), time.perf_counter()
            result = asyncio.run(ingest(server.url, docs))
            wall_s = time.perf_counter() - t0
            cpu_ms = 1000 * (process_cpu_s(worker.proc.pid) - cpu0) / args.docs
            if name not in rows or cpu_ms < rows[name][1]:
                rows[name] = (wall_s, cpu_ms, result)
    unchanged = rows["unchanged"][2]
    if unchanged.skipped != args.docs or unchanged.points:
        raise SystemExit(f"the unchanged documents were not all skipped: {unchanged}")
    print(
        f"{args.docs} documents ({rows['first'][2].points} points), one worker, embedded "
        f"Qdrant; load {state['load']:.2f} at the start, steal {state['steal']:.1f}%"
    )
    print(f"{'run':10s} {'seconds':>8s} {'CPU ms/doc':>10s} {'skipped':>8s} {'points':>7s}")
    for name, (wall_s, cpu_ms, result) in rows.items():
        print(f"{name:10s} {wall_s:8.2f} {cpu_ms:10.2f} {result.skipped:8d} {result.points:7d}")
    ratio = rows["unchanged"][1] / rows["first"][1]
    print(f"unchanged / first, CPU per document: {ratio:.3f} (target <= {args.target:g})")
    if ratio > args.target:
        sys.exit(1)


if __name__ == "__main__":
    main()
