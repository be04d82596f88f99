"""The child side of ``bench_store_scale.py``: one backend (Qdrant Edge or qdrant-client's
local mode) in a process of its own, written through QdrantWriter to each size, then measured
there: write rate, settle time, memory (``/proc/self/status``), bytes on disk, search latency
per mode, and whether rerank equals MaxSim recomputed here. Prints one JSON line per size."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.scale_corpus import SCHEMA, Corpus
from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.schema import CollectionSchema
from poolq.sinks.writer import QdrantWriter
from poolq.wire.search_results import SearchRequest
from tests.support.maxsim import maxsim_many

WRITE_POINTS = 384  # points per writer.write call (a job's worth)
MODES = ("dense", "hybrid", "rerank")


def schema_with(settings: list[str]) -> CollectionSchema:
    """The default profile's schema with ``KEY=VALUE`` [collection] settings (TOML values)."""
    table = tomllib.loads("\n".join(settings)) if settings else {}
    return dataclasses.replace(SCHEMA, settings=CollectionSettings.from_dict(table))


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
