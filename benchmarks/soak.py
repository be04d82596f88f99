"""Soak: 20,000 chunks through `poolq worker` while faults are injected (one SIGKILL of the
worker, one Redis restart), reporting throughput and that nothing was lost or duplicated.

    python benchmarks/soak.py [--chunks N] [--no-peer] [--peer-chunks N] [--job-size N]

A local Redis and one worker on an embedded Qdrant folder; documents (standard-library
passages, one in eight a multi-chunk document of ten passages) are enqueued in jobs of
``--job-size`` until they hold at least ``--chunks`` chunks (counted with the worker's own
chunker, in this process, before the run). While the queue drains:

* after ``--kill-at`` of the jobs are done, the worker is SIGKILLed and a new one started at
  once on the same folder (its jobs in flight are handed back once its heartbeat expires);
* after ``--restart-at`` of the jobs are done, Redis is restarted (append-only file kept).

At the end every job must be done, and the collection exact: the enqueued document ids and no
others, each document's chunk indices exactly 0..chunk_count-1, its chunk_count the one computed
before the run, and the total number of points equal to the sum of the chunk counts and to the
sum of the jobs' ``points``. The same check runs on a fault-free peer (``--peer``, on by default:
its own Redis, worker and folder, ``--peer-chunks`` chunks) whose rate is the comparison.
Exit status 1 if anything was lost or duplicated (or a job failed).

Timings come from a shared CPU machine: compare the two rates of one run, not across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.soak_corpus import chunk_counter, corpus
from benchmarks.soak_report import print_report
from benchmarks.soak_run import RunReport, run_one
from poolq.worker.config.settings import Settings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--chunks", type=int, default=20_000, help="chunks in the soak run")
    ap.add_argument("--peer", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--peer-chunks", type=int, default=5_000, help="chunks in the peer run")
    ap.add_argument("--job-size", type=int, default=32)
    ap.add_argument("--kill-at", type=float, default=0.25, help="fraction of jobs done")
    ap.add_argument("--restart-at", type=float, default=0.60, help="fraction of jobs done")
    ap.add_argument("--keep", action="store_true", help="keep the data folders and logs")
    args = ap.parse_args()

    count = asyncio.run(chunk_counter())
    root = Path(tempfile.mkdtemp(prefix="poolq-soak-"))
    reports: list[RunReport] = []
    try:
        if args.peer:
            peer_chunks = min(args.peer_chunks, args.chunks)
            docs, expected = corpus(peer_chunks, count, "peer")
            reports.append(
                run_one("peer, no faults", root / "peer", docs, expected, args.job_size, [])
            )
        docs, expected = corpus(args.chunks, count, "soak")
        soak = run_one(
            "soak, SIGKILL + Redis restart",
            root / "soak",
            docs,
            expected,
            args.job_size,
            [],
            kill_at=args.kill_at,
            restart_at=args.restart_at,
        )
        reports.append(soak)
    finally:
        ok = bool(reports) and all(r.ok for r in reports)
        if args.keep or not ok:
            print(f"data and worker logs kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    print(
        f"soak benchmark: default profile (dense + colbert + sparse), jobs of {args.job_size}, "
        f"one worker (max_jobs {Settings().max_jobs}), {os.cpu_count()} CPUs"
    )
    for r in reports:
        print_report(r)
    ex = soak.exactness
    assert ex is not None
    soak_rate = ex.points / soak.wall_s
    line = f"soak: {ex.points} chunks, {soak.documents} documents, {soak.jobs} jobs in {soak.wall_s:.1f}s = {soak_rate:.1f} chunks/s"
    if args.peer:
        peer = reports[0]
        assert peer.exactness is not None
        peer_rate = peer.exactness.points / peer.wall_s
        line += f"; fault-free peer {peer_rate:.1f} chunks/s ({peer.exactness.points} chunks); ratio soak/peer {soak_rate / peer_rate:.2f}"
    print(line)
    verdict = (
        "nothing lost or duplicated"
        if all(r.ok for r in reports)
        else "LOST OR DUPLICATED (or failed jobs)"
    )
    print(f"result: {verdict}")
    sys.exit(0 if all(r.ok for r in reports) else 1)


if __name__ == "__main__":
    main()
