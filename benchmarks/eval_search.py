"""Retrieval quality of every search mode on the demo corpus: recall@10 and MRR@10 over a small
labelled query set (``benchmarks/search_queries.jsonl``), through a real worker, in one run.

    python benchmarks/eval_search.py [--corpus-size N] [--candidates N] [--dtype D] [--json]

``--dtype`` (``float32``, ``int8``, ...) runs both bundled models of the default profile in that
precision (a ``[models]`` table in the worker's config): run it once per precision to compare.

The corpus is ``worker/cli/demo.py::_sample_corpus`` (standard-library docstrings, ids
``stdlib-0000``...). Each mode (dense, sparse, hybrid RRF, hybrid DBSF, rerank) runs every query
with limit 10; hits are deduplicated by ``doc_id`` in rank order before scoring (document level).
The peer of hybrid is the better of dense and sparse in the same run; the requirement is that
hybrid is not worse than it by more than 0.02 recall@10 (exit status 1 otherwise, with
``--json`` too).

How the query set was judged (read this before adding queries):

* queries are questions a developer would type, written after reading the corpus; they are not
  copies of a docstring's words. ``kind`` is ``lexical`` when the query shares the docstring's
  rare, distinctive words (``leap year``, ``base64``, ``CSV``, ``ISO 8601``) and ``paraphrase``
  when it describes the need in other words ("create a folder with its parent folders" for
  ``makedirs``; "inverse of the sine function" for ``arc sine``);
* a document is relevant when a developer reading it (alone) would learn the standard-library
  call that does what the query asks. Passages merge several short docstrings, so a passage is
  relevant if any docstring in it answers. Documents that merely mention the topic (a parameter
  named ``digest``, a Decimal NaN predicate for a float question) are not relevant;
* every passage of the corpus that answers was listed (checked by reading and grepping the
  corpus for the topic's words), so several queries have 2-3 relevant documents;
* the set was written once and not tuned to any mode's results.

The labels refer to the corpus as ``poolq demo`` builds it. ``ingest.sample_corpus.passages``
walks ``inspect.getmembers`` of each module, which also lists the submodules that happen to be
imported, so the corpus depends on what the process imported before: it is built here in a
fresh interpreter that imports only ``poolq.worker.cli.demo`` (what ``poolq demo`` gets), and
the texts of the labelled documents are checked against a fingerprint taken when the labels
were written.
With ``--corpus-size`` below 400, relevant ids beyond the corpus are dropped and queries left
with none are skipped (the first 400 documents are the same for any larger size).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from poolq.ingest.client import PoolqClient
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

ROOT = Path(__file__).resolve().parents[1]
QUERIES = Path(__file__).resolve().parent / "search_queries.jsonl"
# sha256 of "id\ttext\n" of every labelled document, in id order, in the corpus they were
# judged on (``poolq demo``'s)
LABELLED_SHA256 = "4876d7b7c77bb1575d4d2e8caae43d86c69a7d005e7c8666741e0903b8823f9f"
COLLECTION = "eval"
K = 10
# (label, mode, fusion)
MODES = [
    ("dense", "dense", "rrf"),
    ("sparse", "sparse", "rrf"),
    ("hybrid-rrf", "hybrid", "rrf"),
    ("hybrid-dbsf", "hybrid", "dbsf"),
    ("rerank", "rerank", "rrf"),
]


def build_corpus(path: Path, n: int) -> dict[str, str]:
    """The demo corpus, built in a fresh interpreter (see the module docstring)."""
    code = (
        "import sys; from pathlib import Path; from poolq.worker.cli.demo import _sample_corpus; "
        "_sample_corpus(Path(sys.argv[1]), int(sys.argv[2]))"
    )
    subprocess.run([sys.executable, "-c", code, str(path), str(n)], cwd=ROOT, check=True)
    lines = path.read_text(encoding="utf-8").splitlines()
    return {d["id"]: d["text"] for d in map(json.loads, lines)}


def labelled_fingerprint(docs: dict[str, str], queries_path: Path) -> str | None:
    """``LABELLED_SHA256`` recomputed on ``docs``; None when some labelled id is missing."""
    lines = queries_path.read_text(encoding="utf-8").splitlines()
    ids = sorted({r for line in lines if line.strip() for r in json.loads(line)["relevant"]})
    if any(i not in docs for i in ids):
        return None
    h = hashlib.sha256()
    for i in ids:
        h.update(f"{i}\t{docs[i]}\n".encode())
    return h.hexdigest()


def load_queries(path: Path, doc_ids: set[str]) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        relevant = [r for r in q["relevant"] if r in doc_ids]
        if relevant:
            out.append(q | {"relevant": relevant})
    return out


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


async def evaluate(
    redis_url: str, corpus: Path, queries: list[dict[str, Any]], candidates: int | None
) -> dict[str, Any]:
    docs = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    async with PoolqClient(redis_url) as client:
        t0 = time.perf_counter()
        ids = await client.enqueue(COLLECTION, docs, job_size=16)
        outcomes = await client.wait(ids, timeout_s=1800)
        ingest_s = time.perf_counter() - t0
        bad = [o for o in outcomes if o.status != "done" or (o.result or {}).get("errors")]
        if bad:
            raise SystemExit(f"{len(bad)} jobs failed or reported errors: {bad[:2]}")
        points = sum(int((o.result or {}).get("points", 0)) for o in outcomes)
        per_mode: dict[str, Any] = {}
        for label, mode, fusion in MODES:
            rows = []
            encode, search = [], []
            for q in queries:
                res = await client.search(
                    q["query"], COLLECTION, mode=mode, limit=K, fusion=fusion, candidates=candidates
                )
                ranking = doc_ranking(res.hits)
                recall, rr = score(ranking, q["relevant"])
                rows.append(
                    {
                        "query": q["query"],
                        "kind": q.get("kind"),
                        "recall": recall,
                        "rr": rr,
                        "top": ranking[:3],
                    }
                )
                encode.append(res.encode_s)
                search.append(res.search_s)
            per_mode[label] = {
                "recall@10": sum(r["recall"] for r in rows) / len(rows),
                "mrr@10": sum(r["rr"] for r in rows) / len(rows),
                "by_kind": {
                    kind: {
                        "n": len(sub),
                        "recall@10": sum(r["recall"] for r in sub) / len(sub),
                        "mrr@10": sum(r["rr"] for r in sub) / len(sub),
                    }
                    for kind in sorted({str(r["kind"]) for r in rows})
                    for sub in [[r for r in rows if str(r["kind"]) == kind]]
                },
                "mean_encode_s": sum(encode) / len(encode),
                "mean_search_s": sum(search) / len(search),
                "queries": rows,
            }
    return {
        "documents": len(docs),
        "points": points,
        "ingest_s": ingest_s,
        "queries": len(queries),
        "candidates": candidates,
        "modes": per_mode,
    }


def multivector_bytes(folder: Path, name: str = "colbert") -> int:
    """Bytes of the stored ``name`` multi-vectors (float32 rows), read back once the worker
    has let go of the folder."""
    from poolq.sinks.store.edge import EdgeStore

    store = EdgeStore(folder)
    try:
        total, offset = 0, None
        while True:
            page, offset = store.scroll(COLLECTION, limit=256, offset=offset, with_vectors=[name])
            for r in page:
                rows = (r.vector or {}).get(name) or []  # type: ignore[union-attr]
                total += sum(len(row) for row in rows) * 4
            if offset is None:
                return total
    finally:
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus-size", type=int, default=400)
    ap.add_argument("--queries", type=Path, default=QUERIES)
    ap.add_argument(
        "--candidates", type=int, default=None, help="prefetch size (default: the service's)"
    )
    ap.add_argument("--json", action="store_true", help="print machine-readable results")
    ap.add_argument("--dtype", default=None, help="precision of the profile's models")
    ap.add_argument(
        "--pool-factor",
        type=int,
        default=None,
        help="pool_factor of the colbert vector (documents' token pooling; rerank uses it)",
    )
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="poolq-eval-"))
    corpus = tmp / "corpus.jsonl"
    texts = build_corpus(corpus, args.corpus_size)
    fingerprint = labelled_fingerprint(texts, args.queries)
    if fingerprint is not None and fingerprint != LABELLED_SHA256 and args.queries == QUERIES:
        raise SystemExit(
            "the corpus differs from the one the queries were labelled on (sample_corpus "
            "depends on the Python version and on what was imported): labels do not apply"
        )
    queries = load_queries(args.queries, set(texts))
    if not queries:
        raise SystemExit("no query has a relevant document in this corpus")
    worker_args: list[str] = []
    config_text = ""
    if args.pool_factor is not None:
        config_text += (
            "[vectors]\n"
            'dense = { model = "bundled:all-minilm-l6-v2", task = "embed" }\n'
            'colbert = { model = "bundled:all-minilm-l6-v2", task = "token_embed", '
            f"pool_factor = {args.pool_factor} }}\n"
            'sparse = { model = "bundled:splade-tiny", task = "sparse" }\n'
        )
    if args.dtype:
        config_text += "".join(
            f'[models."{m}"]\ndtype = "{args.dtype}"\n'
            for m in ("bundled:all-minilm-l6-v2", "bundled:splade-tiny")
        )
    if config_text:
        config = tmp / "poolq.toml"
        config.write_text(config_text)
        worker_args = ["--config", str(config)]
    with (
        LocalRedis(tmp / "redis") as redis_server,
        WorkerProcess(redis_server.url, tmp / "qdrant", *worker_args, log=tmp / "worker.log"),
    ):
        out = asyncio.run(evaluate(redis_server.url, corpus, queries, args.candidates))
    out["colbert_bytes"] = multivector_bytes(tmp / "qdrant")
    modes = out["modes"]
    best_single = max(modes["dense"]["recall@10"], modes["sparse"]["recall@10"])
    out["requirement"] = {
        "peer_recall@10": best_single,
        **{
            label: {
                "recall@10": modes[label]["recall@10"],
                "delta": modes[label]["recall@10"] - best_single,
                "ok": modes[label]["recall@10"] >= best_single - 0.02,
            }
            for label in ("hybrid-rrf", "hybrid-dbsf")
        },
    }
    misses = [
        label for label in ("hybrid-rrf", "hybrid-dbsf") if not out["requirement"][label]["ok"]
    ]
    if args.json:
        print(json.dumps(out, indent=2))
        sys.exit(1 if misses else 0)
    kinds = sorted(next(iter(modes.values()))["by_kind"])
    counts = ", ".join(f"{k} {modes['dense']['by_kind'][k]['n']}" for k in kinds)
    print(
        f"pool_factor {args.pool_factor or 1}: colbert multi-vectors {out['colbert_bytes']} bytes "
        f"({out['colbert_bytes'] / max(1, out['points']):.0f} per point)"
    )
    print(
        f"dtype {args.dtype or 'default'}: "
        f"{out['documents']} documents ({out['points']} points) ingested in "
        f"{out['ingest_s']:.1f}s; {out['queries']} queries ({counts}), limit {K}, "
        f"document-level, candidates {out['candidates'] or 'default'}"
    )
    head = f"{'mode':12s} {'recall@10':>9s} {'MRR@10':>7s}"
    for k in kinds:
        head += f" {'R@10 ' + k[:5]:>11s} {'MRR ' + k[:5]:>10s}"
    print(head + f" {'encode ms':>9s} {'search ms':>9s}")
    for label, m in modes.items():
        line = f"{label:12s} {m['recall@10']:9.3f} {m['mrr@10']:7.3f}"
        for k in kinds:
            line += f" {m['by_kind'][k]['recall@10']:11.3f} {m['by_kind'][k]['mrr@10']:10.3f}"
        print(line + f" {1e3 * m['mean_encode_s']:9.1f} {1e3 * m['mean_search_s']:9.1f}")
    req = out["requirement"]
    print(f"peer (better of dense and sparse) recall@10: {best_single:.3f}")
    for label in ("hybrid-rrf", "hybrid-dbsf"):
        r = req[label]
        print(
            f"{label}: recall@10 {r['recall@10']:.3f}, delta vs peer {r['delta']:+.3f} "
            f"(requirement >= -0.020) {'ok' if r['ok'] else 'MISS'}"
        )
    if misses:
        print(f"MISS: {', '.join(misses)} below the peer by more than 0.02", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
