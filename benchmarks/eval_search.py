"""Retrieval quality of every search mode on the demo corpus: recall@10, MRR@10 and hit@1 over
a small labelled query set (``benchmarks/search_queries.jsonl``), through a real worker, in one
run, per document: hits grouped by ``doc_id`` (what ``client.search`` returns by default) and,
beside them, the chunk-level list (``group_by=None``, what it returned before grouping) with
each document kept at its first chunk.

    python benchmarks/eval_search.py [--corpus-size N] [--candidates N] [--dtype D] [--json]
                                     [--collection KEY=VALUE ...]

``--dtype`` (``float32``, ``int8``, ...) runs both bundled models of the default profile in that
precision (a ``[models]`` table in the worker's config): run it once per precision to compare.
``--collection`` sets ``[collection]`` storage settings (TOML values), e.g.
``--collection multivector_datatype='"uint8"'``: run it once per datatype to compare the
rerank; the multi-vector's stored bytes per chunk and the write rate are printed.

The corpus is ``worker/cli/demo.py::_sample_corpus`` (standard-library docstrings, ids
``stdlib-0000``...). Each mode (dense, sparse, hybrid RRF, hybrid DBSF, rerank) runs every query
with limit 10; chunk-level hits are deduplicated by ``doc_id`` in rank order before scoring
(document level), so a document with many matching chunks leaves fewer than 10 documents there
(``docs/q``: the mean number of distinct documents a search returned).
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
GROUPINGS = {"documents": "doc_id", "chunks": None}  # label -> group_by
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
        "--collection",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a [collection] setting (TOML value), e.g. multivector_datatype='\"uint8\"'",
    )
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
    if args.collection:
        config_text += "[collection]\n" + "\n".join(args.collection) + "\n"
    if config_text:
        config = tmp / "poolq.toml"
        config.write_text(config_text)
        worker_args = ["--config", str(config)]
    with (
        LocalRedis(tmp / "redis") as redis_server,
        WorkerProcess(redis_server.url, tmp / "qdrant", *worker_args, log=tmp / "worker.log"),
    ):
        out = asyncio.run(evaluate(redis_server.url, corpus, queries, args.candidates))
    out["multivector"] = multivector_bytes(tmp / "qdrant")
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
    print(f"pool_factor {args.pool_factor or 1} (the multi-vector's bytes are printed below)")
    print(
        f"dtype {args.dtype or 'default'}: "
        f"{out['documents']} documents ({out['points']} points) ingested in "
        f"{out['ingest_s']:.1f}s; {out['queries']} queries ({counts}), limit {K}, "
        f"document-level, candidates {out['candidates'] or 'default'}"
    )
    for title, table in (
        ("per document (group_by doc_id, the default)", modes),
        ("chunk-level list (group_by None), each document at its first chunk", out["modes_chunks"]),
    ):
        print(title)
        head = f"{'mode':12s} {'recall@10':>9s} {'MRR@10':>7s} {'hit@1':>6s} {'docs/q':>6s}"
        for k in kinds:
            head += f" {'R@10 ' + k[:5]:>11s} {'MRR ' + k[:5]:>10s}"
        print(head + f" {'encode ms':>9s} {'search ms':>9s} {'load1':>5s} {'steal':>6s}")
        for label, m in table.items():
            line = (
                f"{label:12s} {m['recall@10']:9.3f} {m['mrr@10']:7.3f} {m['hit@1']:6.3f} "
                f"{m['docs/q']:6.1f}"
            )
            for k in kinds:
                line += f" {m['by_kind'][k]['recall@10']:11.3f} {m['by_kind'][k]['mrr@10']:10.3f}"
            print(
                line + f" {1e3 * m['mean_encode_s']:9.1f} {1e3 * m['mean_search_s']:9.1f}"
                f" {m['load1']:5.1f} {m['steal_pct']:5.1f}%"
            )
    mv = out["multivector"]
    print(
        f"multi-vector {mv['name']!r}: {mv['datatype']}, {mv['rows_per_chunk']:.1f} rows x "
        f"{mv['dim']} a chunk on average: {mv['bytes_per_chunk'] / 1024:.1f} KiB a chunk; "
        f"write rate {out['points'] / out['ingest_s']:.1f} chunks/s (ingest, encoding included)"
    )
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
