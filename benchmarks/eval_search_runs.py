"""The measuring of ``eval_search.py``: the corpus ingested through a real client, every query
run in every mode (grouped by document and chunk-level), each scored (recall@10, MRR@10,
hit@1) with its encode and search time, load and stolen CPU beside it, and the stored
multi-vector's bytes per chunk."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from poolq.ingest.client import PoolqClient

COLLECTION = "eval"
K = 10
GROUPINGS = {"documents": "doc_id", "chunks": None}  # label -> group_by
# (label, mode, fusion)
MODES = [
    ("dense", "dense", "rrf"),
    ("sparse", "sparse", "rrf"),
    ("hybrid-rrf", "hybrid", "rrf"),
    ("hybrid-dbsf", "hybrid", "dbsf"),
    ("rerank", "rerank", "rrf"),
]


def doc_ranking(hits: list[Any]) -> list[str]:
    """Document ids in rank order, each once (its best chunk)."""
    return list(dict.fromkeys(h.doc_id for h in hits if h.doc_id is not None))


def score(ranking: list[str], relevant: list[str], k: int = K) -> tuple[float, float]:
    """(recall@k, reciprocal rank@k) of one query."""
    top = ranking[:k]
    rel = set(relevant)
    recall = len(rel & set(top)) / len(rel)
    rr = next((1.0 / (i + 1) for i, d in enumerate(top) if d in rel), 0.0)
    return recall, rr


def steal_s() -> float:
    """CPU time stolen from this (virtual) machine so far, all CPUs (/proc/stat)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = len(rows)
    return {
        "recall@10": sum(r["recall"] for r in rows) / n,
        "mrr@10": sum(r["rr"] for r in rows) / n,
        "hit@1": sum(r["rr"] == 1.0 for r in rows) / n,
        "docs/q": sum(r["docs"] for r in rows) / n,
    }


async def evaluate(
    redis_url: str, corpus: Path, queries: list[dict[str, Any]], candidates: int | None
) -> dict[str, Any]:
    docs = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    async with PoolqClient(redis_url) as client:
        t0 = time.perf_counter()
        ids = await client.enqueue(COLLECTION, docs, job_size=16)
        outcomes = await client.wait(ids, timeout_s=1800)
        ingest_s = time.perf_counter() - t0
        bad = [o for o in outcomes if o.status != "done" or o.result is None or o.result.errors]
        if bad:
            raise SystemExit(f"{len(bad)} jobs failed or reported errors: {bad[:2]}")
        points = sum(o.result.points for o in outcomes if o.result is not None)
        per_grouping: dict[str, Any] = {}
        for grouping, group_by in GROUPINGS.items():
            per_grouping[grouping] = await _modes(client, queries, candidates, group_by)
    return {
        "documents": len(docs),
        "points": points,
        "ingest_s": ingest_s,
        "queries": len(queries),
        "candidates": candidates,
        "modes": per_grouping["documents"],
        "modes_chunks": per_grouping["chunks"],
    }


async def _modes(
    client: PoolqClient,
    queries: list[dict[str, Any]],
    candidates: int | None,
    group_by: str | None,
) -> dict[str, Any]:
    per_mode: dict[str, Any] = {}
    for label, mode, fusion in MODES:
        rows = []
        encode, search = [], []
        load0, steal0, t0 = os.getloadavg()[0], steal_s(), time.perf_counter()
        for q in queries:
            res = await client.search(
                q["query"], COLLECTION, mode=mode, limit=K, fusion=fusion,
                candidates=candidates, group_by=group_by,
            )  # fmt: skip
            ranking = doc_ranking(res.hits)
            recall, rr = score(ranking, q["relevant"])
            rows.append(
                {
                    "query": q["query"],
                    "kind": q.get("kind"),
                    "recall": recall,
                    "rr": rr,
                    "docs": len(ranking),
                    "top": ranking[:3],
                }
            )
            encode.append(res.encode_s)
            search.append(res.search_s)
        per_mode[label] = summary(rows) | {
            "by_kind": {
                kind: {"n": len(sub)} | summary(sub)
                for kind in sorted({str(r["kind"]) for r in rows})
                for sub in [[r for r in rows if str(r["kind"]) == kind]]
            },
            "mean_encode_s": sum(encode) / len(encode),
            "mean_search_s": sum(search) / len(search),
            "load1": (load0 + os.getloadavg()[0]) / 2,
            "steal_pct": 100
            * (steal_s() - steal0)
            / max(1e-9, (time.perf_counter() - t0) * (os.cpu_count() or 1)),
            "queries": rows,
        }
    return per_mode


def multivector_bytes(folder: Path) -> dict[str, Any]:
    """The stored multi-vector of the collection: datatype, rows a chunk, bytes a chunk."""
    from poolq.sinks.store.edge import EdgeStore

    itemsize = {"float32": 4, "float16": 2, "uint8": 1}
    store = EdgeStore(folder)
    try:
        params = store.collection_params(COLLECTION).vectors
        assert isinstance(params, dict)
        name, p = next((n, p) for n, p in params.items() if p.multivector_config is not None)
        datatype = "float32" if p.datatype is None else str(p.datatype.value)
        rows = points = 0
        offset = None
        while True:
            page, offset = store.scroll(
                COLLECTION, limit=256, offset=offset, with_payload=False, with_vectors=[name]
            )
            points += len(page)
            rows += sum(len(r.vector[name]) for r in page if isinstance(r.vector, dict))
            if offset is None:
                break
    finally:
        store.close()
    per_chunk = rows / max(points, 1)
    return {
        "name": name,
        "datatype": datatype,
        "dim": p.size,
        "rows_per_chunk": per_chunk,
        "bytes_per_chunk": per_chunk * p.size * itemsize[datatype],
    }
