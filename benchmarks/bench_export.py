"""Export and import of one collection in both formats: ``.npy`` shards with a manifest (the
default) and JSON lines, in the same run, rounds interleaved, best of each.

    python benchmarks/bench_export.py [--points N] [--tokens T] [--dim D] [--datatype float32]
                                      [--rounds R]

The collection is synthetic and ColBERT-shaped (Qdrant Edge, the embedded store): per point a
dense 384 vector, a sparse vector of ~100 non-zeros, a multi-vector of about T x D (+-20%) and a
~600-character text payload. Printed: the stored vector bytes, each format's size, export and
import times (each with the load average and the CPU time stolen by other tenants during it),
and whether each format's round trip is bit for bit (every point's payload and vectors read
back from the imported collection against the source).

A third row, ``jsonl-before``, imports JSON lines as poolq did before the npy format came
(the collection created with its WAL on: Qdrant Edge 0.9 then replays the whole WAL on each of
the two loads of ``finish_build``); its export is the same code as ``jsonl``'s.

Targets (exit status 1 on a miss): npy no larger than 1.2x the stored vector bytes; npy export
and import each >= 5x faster than JSON lines as they were (``jsonl-before``; the ratio against
today's ``jsonl`` is printed too); the npy round trip exact.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.procs import cpu_pressure, steal_s
from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.collections import ensure_collection
from poolq.sinks.points import PointRecord, SparseValues, point_id, to_point_struct
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.store.edge import EdgeStore
from poolq.sinks.store.interface import Store
from poolq.sinks.transfer import export_npy, export_points, import_npy, import_points

FORMATS = ("jsonl-before", "jsonl", "npy")
ITEMSIZE = {"float32": 4, "float16": 2, "uint8": 1}
TEXT = ("Return the number of days in a month of a year, leap years counted. " * 10)[:600]


def build(path: Path, n: int, tokens: int, dim: int, datatype: str) -> tuple[EdgeStore, int]:
    """The source collection, and its stored vector bytes."""
    schema = CollectionSchema(
        "kb",
        (
            VectorSpec("dense", "dense", 384, "m"),
            VectorSpec("sparse", "sparse", None, "s"),
            VectorSpec("colbert", "multi", dim, "m"),
        ),
        CollectionSettings(multivector_datatype=datatype),  # type: ignore[arg-type]
    )
    store = EdgeStore(path)
    ensure_collection(store, schema)
    rng = np.random.default_rng(0)
    stored = 0
    for start in range(0, n, 64):
        batch = []
        for i in range(start, min(n, start + 64)):
            t = int(rng.integers(int(tokens * 0.8), int(tokens * 1.2) + 1))
            nnz = int(rng.integers(60, 140))
            idx = sorted(rng.choice(30522, size=nnz, replace=False).tolist())
            vectors = {
                "dense": rng.standard_normal(384).astype(np.float32),
                "sparse": SparseValues(idx, rng.random(nnz).astype(np.float32).tolist()),
                "colbert": rng.standard_normal((t, dim)).astype(np.float32),
            }
            stored += 384 * 4 + nnz * 8 + t * dim * ITEMSIZE[datatype]
            payload = {"doc_id": f"man-{i // 4}", "chunk_index": i % 4, "text": TEXT}
            batch.append(
                to_point_struct(
                    PointRecord(point_id(f"man-{i // 4}", i % 4), vectors, payload), arrays_ok=True
                )
            )
        store.upsert("kb", batch)
    return store, stored


class LoggedEdgeStore(EdgeStore):
    """Import as before: the new collection created with its WAL on."""

    create_for_import = Store.create_for_import


def measured(fn: Callable[[], Any]) -> tuple[float, str]:
    load, steal0, t0 = os.getloadavg()[0], steal_s(), time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    return wall, f"load {load:.1f}, steal {steal_s() - steal0:.1f}s, psi {cpu_pressure()}"


def size_of(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(f.stat().st_size for f in path.iterdir())


def everything(store: EdgeStore) -> dict[str, Any]:
    out, offset = {}, None
    while True:
        page, offset = store.scroll("kb", limit=128, offset=offset, with_vectors=True)
        for r in page:
            out[str(r.id)] = (
                r.payload,
                {
                    k: v if isinstance(v, list) is False else np.asarray(v, np.float32).tobytes()
                    for k, v in r.vector.items()
                },
            )
        if offset is None:
            return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=300)
    ap.add_argument("--tokens", type=int, default=250)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--datatype", default="float32", choices=sorted(ITEMSIZE))
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="poolq-bench-export-"))
    try:
        run(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, tmp: Path) -> None:
    t0 = time.perf_counter()
    source, stored = build(tmp / "source", args.points, args.tokens, args.dim, args.datatype)
    print(
        f"collection: {args.points} points, multi-vectors ~{args.tokens} x {args.dim} "
        f"{args.datatype}, dense 384, sparse ~100 nnz; stored vector bytes {stored / 1e6:.1f} MB "
        f"(built in {time.perf_counter() - t0:.0f}s)"
    )
    settings = source_settings = CollectionSettings(multivector_datatype=args.datatype)  # type: ignore[arg-type]
    want = everything(source)
    results: dict[str, dict[str, list[tuple[float, str]]]] = {
        f: {"export": [], "import": []} for f in FORMATS
    }
    sizes: dict[str, int] = {}
    exact: dict[str, bool] = {}
    for r in range(args.rounds):
        for fmt in FORMATS if r % 2 == 0 else FORMATS[::-1]:
            out = tmp / f"export-{fmt}-{r}" if fmt == "npy" else tmp / f"export-{fmt}-{r}.jsonl"

            def do_export(fmt: str = fmt, out: Path = out) -> None:
                if fmt == "npy":
                    export_npy(source, "kb", out)
                else:
                    with out.open("w", encoding="utf-8") as f:
                        export_points(source, "kb", f.write)

            results[fmt]["export"].append(measured(do_export))
            sizes[fmt] = size_of(out)
            kind = LoggedEdgeStore if fmt == "jsonl-before" else EdgeStore
            dest = kind(tmp / f"dest-{fmt}-{r}")

            def do_import(fmt: str = fmt, out: Path = out, dest: EdgeStore = dest) -> None:
                if fmt == "npy":
                    import_npy(dest, "kb", out, settings=settings)
                else:
                    with out.open(encoding="utf-8") as f:
                        import_points(dest, "kb", f, settings=source_settings)

            results[fmt]["import"].append(measured(do_import))
            if r == 0:
                exact[fmt] = everything(dest) == want
            dest.close()
            shutil.rmtree(tmp / f"dest-{fmt}-{r}")
            shutil.rmtree(out) if out.is_dir() else out.unlink()
    source.close()

    best = {f: {op: min(v) for op, v in ops.items()} for f, ops in results.items()}
    print(
        f"{'format':12s} {'size MB':>8s} {'x stored':>8s} {'export s':>9s} {'import s':>9s} {'exact':>6s}"
    )
    for fmt in FORMATS:
        e, i = best[fmt]["export"], best[fmt]["import"]
        print(
            f"{fmt:12s} {sizes[fmt] / 1e6:8.1f} {sizes[fmt] / stored:8.2f} {e[0]:9.2f} {i[0]:9.2f} "
            f"{'yes' if exact[fmt] else 'NO':>6s}   export: {e[1]}; import: {i[1]}"
        )
    ratio_e = best["jsonl-before"]["export"][0] / best["npy"]["export"][0]
    ratio_i = best["jsonl-before"]["import"][0] / best["npy"]["import"][0]
    now_e = best["jsonl"]["export"][0] / best["npy"]["export"][0]
    now_i = best["jsonl"]["import"][0] / best["npy"]["import"][0]
    print(f"against today's jsonl (WAL-less import too): export {now_e:.1f}x, import {now_i:.1f}x")
    checks = {
        f"npy size {sizes['npy'] / stored:.2f}x stored (target <= 1.20x)": sizes["npy"]
        <= 1.2 * stored,
        f"npy export {ratio_e:.1f}x faster than jsonl-before (target >= 5x)": ratio_e >= 5,
        f"npy import {ratio_i:.1f}x faster than jsonl-before (target >= 5x)": ratio_i >= 5,
        "npy round trip exact": exact["npy"],
    }
    for what, ok in checks.items():
        print(f"{'ok  ' if ok else 'MISS'} {what}")
    print(
        f"all rounds: { {f: {op: [round(t, 2) for t, _ in v] for op, v in ops.items()} for f, ops in results.items()} }"
    )
    if not all(checks.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
