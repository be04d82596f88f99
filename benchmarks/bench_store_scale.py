"""The store at scale: the writer path (QdrantWriter, batches of 128, stale-chunk probes, the
default profile's [collection] settings) on Qdrant Edge at 10k, 30k and 100k points, against
qdrant-client's local mode (the old embedded store) at the sizes it reaches, in the same run.

Points have the default profile's shapes, synthetic: dense 384 (unit), sparse ~120 non-zeros
over 30,522 (SPLADE's vocabulary), a multi-vector of 16-80 tokens (mean 48) x 384, and the
payload ingest writes. For each size: write points/s (the time inside ``writer.write``),
background index building still running when the writes end ("settle"), RSS (VmRSS and its
anonymous part), bytes on disk (allocated), and search p50/p95 for dense, hybrid and rerank
through the writer's read path (no model time). Rerank fidelity: for a few queries, the order
equals MaxSim recomputed here from the stored multi-vectors. Each backend runs in a process of
its own (RSS is its own), one after the other.

Targets (exit 1 on a miss): Edge writes >= 5x local mode at 10k; rerank p50 <= 50 ms at 100k;
RSS <= 2 GiB at 100k; per-point write cost and disk per point at the largest size within 2x of
the smallest, and search p50 growing no faster than the point count.

    python benchmarks/bench_store_scale.py [--sizes 10000,30000,100000] [--local-sizes 10000]
        [--queries 50] [--local-budget-s 900] [--collection multivector_datatype=float16 ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scale_corpus import DIM, NNZ, VOCAB
from benchmarks.store_scale_measure import run_backend, schema_with
from benchmarks.store_scale_report import check, table


def child(
    backend: str, sizes: list[int], queries: int, budget_s: float, settings: list[str]
) -> list[dict]:
    cmd = [sys.executable, __file__, "--child", backend, "--sizes", ",".join(map(str, sizes))]
    cmd += ["--queries", str(queries), "--local-budget-s", str(budget_s)]
    cmd += [f"--collection={s}" for s in settings]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{backend} run failed:\n{proc.stderr[-3000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,30000,100000")
    ap.add_argument("--local-sizes", default="10000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--local-budget-s", type=float, default=900)
    ap.add_argument("--child", choices=["edge", "local"])
    ap.add_argument(
        "--collection",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a [collection] setting for both backends, e.g. multivector_datatype=float16",
    )
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    if args.child:
        asyncio.run(
            run_backend(args.child, sizes, args.queries, args.local_budget_s, args.collection)
        )
        return
    local_sizes = [int(x) for x in args.local_sizes.split(",") if x]
    t0 = time.monotonic()
    edge = child("edge", sizes, args.queries, args.local_budget_s, args.collection)
    local = (
        child("local", local_sizes, args.queries, args.local_budget_s, args.collection)
        if local_sizes
        else []
    )
    schema = schema_with(args.collection)
    print(f"default profile shapes: dense {DIM}, sparse {NNZ} nnz / {VOCAB}, multi 16-80 x {DIM}")
    print(f"[collection] {schema.settings.to_dict()}")
    print(f"writer path, batches of 128; {os.cpu_count()} cores; {time.monotonic() - t0:.0f}s\n")
    table(edge + local)
    misses = check(edge, local)
    print("\n" + ("all targets met" if not misses else "MISSED:\n  " + "\n  ".join(misses)))
    if misses:
        sys.exit(1)


if __name__ == "__main__":
    main()
