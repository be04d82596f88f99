"""Many small ingest jobs enqueued at once against the same jobs one at a time, through one real
worker (Redis -> `poolq worker` -> embedded Qdrant), in the same run: jobs that are queued
together share the engine's batches (continuous batching across jobs), so they end sooner.

    python benchmarks/bench_cross_job.py [--jobs 20] [--docs-per-job 3] [--rounds 2]

A warm-up round first (the collection's creation, the first batches); then each round runs
both modes, the peer order alternating. Per mode, the best round: wall seconds from the first
enqueue to the last job ended, the worker's CPU ms per document (its process and children,
``/proc``), and from the worker's heartbeat its engine's tokens per batch and the batches that
held requests of several jobs. With the 1-minute load at the start and the CPU steal over it.

Target (exit 1 on a miss): one at a time / all at once >= ``--target`` in wall time (default
1.0: all at once is faster). tests/integration/test_cross_job_batching.py checks the batching
itself (tokens per batch, jobs mixed) by the engine's counters.
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
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.integration.test_cross_job_batching import engine_stats, jobs  # the test's own jobs

MODES = ("one at a time", "all at once")


async def one_at_a_time(url: str, work: list[list[dict]]) -> None:
    async with PoolqClient(url) as c:
        for docs in work:
            ids = await c.enqueue("seq", docs, job_size=len(docs), force=True)
            await c.wait(ids, timeout_s=600, poll_s=0.01)


async def all_at_once(url: str, work: list[list[dict]]) -> None:
    async with PoolqClient(url) as c:
        ids = [
            i
            for docs in work
            for i in await c.enqueue("conc", docs, job_size=len(docs), force=True)
        ]
        outcomes = await c.wait(ids, timeout_s=600, poll_s=0.01)
    if not all(o.status == "done" for o in outcomes):
        raise SystemExit(f"jobs failed: {[o.error for o in outcomes if o.status != 'done']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--docs-per-job", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--target", type=float, default=1.0)
    args = ap.parse_args()
    work = jobs(args.jobs, args.docs_per_job)
    docs = args.jobs * args.docs_per_job
    run = {MODES[0]: one_at_a_time, MODES[1]: all_at_once}
    best: dict[str, dict[str, float]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="poolq-bench-cross-job-"))
    with (
        machine_state() as state,
        LocalRedis(tmp / "redis") as server,
        WorkerProcess(server.url, tmp / "qdrant", log=tmp / "worker.log") as worker,
    ):
        assert worker.proc is not None
        done = args.jobs
        asyncio.run(one_at_a_time(server.url, work))  # warm-up
        before = engine_stats(worker, done)
        for r in range(args.rounds):
            for mode in MODES if r % 2 == 0 else MODES[::-1]:
                cpu0, t0 = process_cpu_s(worker.proc.pid), time.perf_counter()
                asyncio.run(run[mode](server.url, work))
                wall_s = time.perf_counter() - t0
                done += args.jobs
                after = engine_stats(worker, done)
                cpu_s = process_cpu_s(worker.proc.pid) - cpu0
                row = {
                    "wall_s": wall_s,
                    "cpu_ms_per_doc": 1000 * cpu_s / docs,
                    "tokens_per_batch": (after["tokens"] - before["tokens"])
                    / max(1, after["batches"] - before["batches"]),
                    "multi_job_batches": after["multi_group_batches"]
                    - before["multi_group_batches"],
                }
                before = after
                if mode not in best or wall_s < best[mode]["wall_s"]:
                    best[mode] = row
    print(
        f"{args.jobs} jobs of {args.docs_per_job} documents, one worker, embedded Qdrant; "
        f"best of {args.rounds}; load {state['load']:.2f} at the start, steal {state['steal']:.1f}%"
    )
    print(
        f"{'mode':14s} {'seconds':>8s} {'CPU ms/doc':>10s} {'tokens/batch':>12s} {'multi-job':>9s}"
    )
    for mode in MODES:
        b = best[mode]
        print(
            f"{mode:14s} {b['wall_s']:8.2f} {b['cpu_ms_per_doc']:10.1f} "
            f"{b['tokens_per_batch']:12.0f} {b['multi_job_batches']:9.0f}"
        )
    ratio = best[MODES[0]]["wall_s"] / best[MODES[1]]["wall_s"]
    print(f"one at a time / all at once: {ratio:.2f}x (target >= {args.target:g}x)")
    if ratio < args.target:
        sys.exit(1)


if __name__ == "__main__":
    main()
