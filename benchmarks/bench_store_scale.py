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
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contextlib
import itertools

from benchmarks.scale_corpus import DIM, NNZ, SCHEMA, VOCAB, Corpus
from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.maxsim import maxsim_many
from poolq.sinks.schema import CollectionSchema
from poolq.sinks.writer import QdrantWriter
from poolq.wire.search_types import SearchRequest

WRITE_POINTS = 384  # points per writer.write call (a job's worth)
MODES = ("dense", "hybrid", "rerank")
WRITE_RATIO_TARGET = 5.0
RERANK_P50_TARGET_MS = 50.0
RSS_TARGET_BYTES = 2 << 30
GROWTH_TARGET = 2.0


def schema_with(settings: list[str]) -> CollectionSchema:
    """The default profile's schema with ``KEY=VALUE`` [collection] settings (TOML values)."""
    table = tomllib.loads("\n".join(settings)) if settings else {}
    return dataclasses.replace(SCHEMA, settings=CollectionSettings.from_dict(table))


# -- measurements ------------------------------------------------------------------------------


def memory() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def disk_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(root, f)).st_blocks * 512
    return total


async def search_latency(
    writer: QdrantWriter,
    schema: CollectionSchema,
    corpus: Corpus,
    mode: str,
    n: int,
    budget_s: float,
) -> tuple[list[float], int]:
    times: list[float] = []
    request = SearchRequest("bench", mode, 10)  # type: ignore[arg-type]
    deadline = time.monotonic() + budget_s
    empty = 0
    for _ in range(n):
        q = corpus.query()
        t0 = time.perf_counter()
        hits = await writer.search(schema, request, q)
        times.append(time.perf_counter() - t0)
        empty += not hits
        if time.monotonic() > deadline:
            break
    return times, empty


async def rerank_fidelity(
    writer: QdrantWriter, schema: CollectionSchema, corpus: Corpus, n: int = 3
) -> bool:
    """Rerank's order is MaxSim recomputed here from the stored multi-vectors: each hit's score
    is its MaxSim, best first, and no fused candidate certainly in the pool (fused score above
    the pool's last, where RRF ties can fall either way) scores higher than the last hit."""
    for _ in range(n):
        q = corpus.query()
        cands = await writer.search(schema, SearchRequest("bench", "hybrid", 50, candidates=50), q)
        rerank = await writer.search(schema, SearchRequest("bench", "rerank", 10, candidates=50), q)
        ids = list(dict.fromkeys([h.id for h in cands] + [h.id for h in rerank]))
        stored = {str(r.id): r for r in await writer.retrieve("bench", ids)}
        scores = maxsim_many(q["colbert"], [np.asarray(stored[i].vector["colbert"]) for i in ids])
        by_id = dict(zip(ids, scores.tolist(), strict=True))
        got = [h.score for h in rerank]
        if any(abs(by_id[h.id] - h.score) > 1e-3 for h in rerank) or got != sorted(got)[::-1]:
            return False
        surely_in = {h.id for h in cands if h.score > cands[-1].score + 1e-9}
        missed = [i for i in surely_in - {h.id for h in rerank} if by_id[i] > got[-1] + 1e-3]
        if missed:
            return False
    return True


def read_through(path: Path) -> None:
    """Read every file of the store into the page cache (what a while of searches does)."""
    for root, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError), open(os.path.join(root, f), "rb") as fh:
                while fh.read(1 << 24):
                    pass


async def run_backend(
    backend: str, sizes: list[int], queries: int, budget_s: float, settings: list[str]
) -> None:
    schema = schema_with(settings)
    folder = Path(tempfile.mkdtemp(prefix=f"poolq-scale-{backend}-"))
    if backend == "edge":
        writer = QdrantWriter(path=str(folder / "store"))
    else:
        from qdrant_client import QdrantClient

        from poolq.sinks.store.client import ClientStore

        def local() -> ClientStore:
            client = QdrantClient(path=str(folder / "store"))
            return ClientStore(client, description="local mode", local=True)

        writer = QdrantWriter(store_factory=local)
    corpus = Corpus()
    t_start = time.monotonic()
    try:
        async with writer:
            await writer.ensure_collection(schema, behind_alias=True)
            written, write_s = 0, 0.0
            for size in sizes:
                step_points, step_s = size - written, 0.0
                while written < size:
                    n = min(WRITE_POINTS, size - written)
                    points, replace = corpus.points(written, n)
                    t0 = time.perf_counter()
                    await writer.write("bench", points, replace_docs=replace)
                    step_s += time.perf_counter() - t0
                    written += n
                    if backend == "local" and time.monotonic() - t_start > budget_s:
                        break
                write_s += step_s
                t0 = time.perf_counter()
                await writer.call(lambda s: s.settle())
                settle_s = time.perf_counter() - t0
                count = await writer.count("bench")
                result: dict[str, Any] = {
                    "backend": backend,
                    "size": written,
                    "count": count,
                    "write_pps": written / write_s,
                    "step_s_per_point": step_s / max(1, step_points),
                    "settle_s": settle_s,
                    "disk": disk_bytes(folder),
                    **memory(),
                }
                per_mode_budget = 60.0 if backend == "local" else 120.0
                for mode in MODES:
                    times, empty = await search_latency(
                        writer, schema, corpus, mode, queries, per_mode_budget
                    )
                    result[mode] = {
                        "p50_ms": 1e3 * float(np.percentile(times, 50)),
                        "p95_ms": 1e3 * float(np.percentile(times, 95)),
                        "n": len(times),
                        "empty": empty,
                    }
                if backend == "edge":
                    result["rerank_equals_maxsim"] = await rerank_fidelity(writer, schema, corpus)
                    # the same, once the multi-vectors are in the page cache
                    await asyncio.to_thread(read_through, folder)
                    times, _ = await search_latency(
                        writer, schema, corpus, "rerank", queries, 120.0
                    )
                    result["rerank_warm_p50_ms"] = 1e3 * float(np.percentile(times, 50))
                result.update({k: v for k, v in memory().items() if k == "VmHWM"})
                print(json.dumps(result), flush=True)
                if written < size:  # local mode ran out of time
                    break
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- the parent: both backends, the table, the targets ------------------------------------------


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


def mib(x: float) -> str:
    return f"{x / 2**20:,.0f} MiB"


def table(rows: list[dict]) -> None:
    head = " ".join(f"{m + ' p50/p95 ms':>17}" for m in MODES)
    print(
        f"{'backend':7} {'points':>7} {'write/s':>8} {'settle':>7} {'VmRSS':>10} {'anon':>9} "
        f"{'disk':>10} {head}  queries"
    )
    for r in rows:
        lat = " ".join(f"{r[m]['p50_ms']:>8.1f}/{r[m]['p95_ms']:<8.1f}" for m in MODES)
        n = "/".join(str(r[m]["n"]) for m in MODES)
        print(
            f"{r['backend']:7} {r['size']:>7} {r['write_pps']:>8.0f} {r['settle_s']:>6.1f}s "
            f"{mib(r['VmRSS']):>10} {mib(r['RssAnon']):>9} {mib(r['disk']):>10} {lat}  {n}"
        )


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


def check(edge: list[dict], local: list[dict]) -> list[str]:
    misses: list[str] = []

    def target(ok: bool, text: str) -> None:
        print(f"  {'ok  ' if ok else 'MISS'} {text}")
        if not ok:
            misses.append(text)

    print("\ntargets:")
    for r in edge:
        target(r["count"] == r["size"], f"edge {r['size']}: count {r['count']} exact")
        target(all(r[m]["empty"] == 0 for m in MODES), f"edge {r['size']}: no empty result")
        target(r.get("rerank_equals_maxsim", False), f"edge {r['size']}: rerank = MaxSim here")
    if local:
        lo, eo = local[0], next((r for r in edge if r["size"] == local[0]["size"]), edge[0])
        if lo["size"] != eo["size"]:
            print(f"  (local mode reached {lo['size']} points: compared at its size)")
        ratio = eo["write_pps"] / lo["write_pps"]
        target(
            ratio >= WRITE_RATIO_TARGET,
            f"write {eo['write_pps']:.0f}/s vs local mode {lo['write_pps']:.1f}/s at "
            f"{lo['size']}: {ratio:.1f}x (>= {WRITE_RATIO_TARGET:.0f}x)",
        )
        for m in MODES:
            print(
                f"       {m}: edge p50 {eo[m]['p50_ms']:.1f} ms vs local mode "
                f"{lo[m]['p50_ms']:.1f} ms ({lo[m]['p50_ms'] / eo[m]['p50_ms']:.0f}x)"
            )
    big, small = edge[-1], edge[0]
    target(
        big["rerank"]["p50_ms"] <= RERANK_P50_TARGET_MS,
        f"rerank p50 at {big['size']}: {big['rerank']['p50_ms']:.1f} ms "
        f"(<= {RERANK_P50_TARGET_MS:.0f})",
    )
    target(
        big["VmRSS"] <= RSS_TARGET_BYTES,
        f"RSS at {big['size']}: {mib(big['VmRSS'])} (anonymous {mib(big['RssAnon'])}; "
        f"<= {mib(RSS_TARGET_BYTES)})",
    )
    for r in edge:
        if "rerank_warm_p50_ms" in r:
            print(f"       rerank p50 at {r['size']} with the page cache warm: "
                  f"{r['rerank_warm_p50_ms']:.1f} ms")  # fmt: skip
    bends(edge)
    if len(edge) > 1:
        print("  growth, smallest -> largest (linear: per-point cost flat, latency <= x points):")
        scale = big["size"] / small["size"]
        per_point = big["step_s_per_point"] / small["step_s_per_point"]
        target(per_point <= GROWTH_TARGET, f"write cost per point x{per_point:.2f}")
        disk = (big["disk"] / big["size"]) / (small["disk"] / small["size"])
        target(disk <= GROWTH_TARGET, f"disk per point x{disk:.2f}")
        for m in MODES:
            g = big[m]["p50_ms"] / small[m]["p50_ms"]
            target(g <= scale, f"{m} p50 x{g:.2f} for x{scale:.0f} points")
        rss = big["VmRSS"] / small["VmRSS"]
        target(rss <= scale * 1.02, f"RSS x{rss:.2f} for x{scale:.0f} points")
    return misses


def bends(rows: list[dict]) -> None:
    """Growth exponents between successive sizes: cost ~ points^e (1 = linear, 0 = flat)."""
    if len(rows) < 2:
        return
    print("  where it bends: cost ~ points^e between sizes (e > 1 grows faster than linear)")
    metrics = {
        "write time": lambda r: r["size"] / r["write_pps"],
        "disk": lambda r: r["disk"],
        "VmRSS": lambda r: r["VmRSS"],
        **{f"{m} p50": (lambda r, m=m: r[m]["p50_ms"]) for m in MODES},
    }
    for a, b in itertools.pairwise(rows):
        dx = np.log(b["size"] / a["size"])
        parts = [f"{k} {np.log(f(b) / f(a)) / dx:.2f}" for k, f in metrics.items()]
        print(f"       {a['size']} -> {b['size']}: " + ", ".join(parts))


if __name__ == "__main__":
    main()
