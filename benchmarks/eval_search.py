"""Retrieval quality of every search mode on the demo corpus: recall@10, MRR@10 and hit@1 over
a small labelled query set (``benchmarks/search_queries.jsonl``), through a real worker, in one
run, per document: hits grouped by ``doc_id`` (what ``client.search`` returns by default) and,
beside them, the chunk-level list (``group_by=None``, what it returned before grouping) with
each document kept at its first chunk.

    python benchmarks/eval_search.py [--corpus-size N] [--candidates N] [--dtype D] [--json]
                                     [--collection KEY=VALUE ...]
    python benchmarks/eval_search.py --set plain --set documents [--out build/eval-search]

``--set`` picks what is measured (repeat it; default ``demo``, the corpus below): ``plain``,
Debian's man pages rendered to plain text (452 ``.txt`` files, no title, no headings) with 76
paraphrased questions, and ``documents``, the PDF, HTML, DOCX, PPTX and EPUB files of
``eval_documents.py``; each is indexed as a folder of files (``poolq enqueue FOLDER``), and
its requirement is that the default mode finds the right file first, and among the first 3
(PDF: the right page among the first 3), at least as often as dense alone
(``eval_search_sets.py``). The exit status is 1 when any chosen set misses its requirement.

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
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.eval_search_corpus import (
    LABELLED_SHA256,
    QUERIES,
    build_corpus,
    labelled_fingerprint,
    load_queries,
)
from benchmarks.eval_search_report import print_report, requirement
from benchmarks.eval_search_runs import evaluate, multivector_bytes
from benchmarks.eval_search_sets import documents_set, plain_set
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

ROOT = Path(__file__).resolve().parents[1]


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
    ap.add_argument(
        "--set",
        action="append",
        choices=("demo", "plain", "documents"),
        dest="sets",
        help="what to measure (repeat it): demo (the default), plain (man pages as text "
        "files), documents (eval_documents.py's files); see eval_search_sets.py",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "eval-search")
    args = ap.parse_args()
    sets = args.sets or ["demo"]
    misses: list[str] = []
    for name in ("plain", "documents"):
        if name in sets:
            lines, missed = (plain_set if name == "plain" else documents_set)(args.out)
            print("\n".join(lines) + "\n", flush=True)
            misses += missed
    if "demo" in sets:
        misses += demo_set(args)
    for m in misses:
        print(f"MISS: {m}", file=sys.stderr)
    sys.exit(1 if misses else 0)


def demo_set(args: argparse.Namespace) -> list[str]:
    """The demo corpus's run (the module docstring); its misses."""
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
    out["requirement"] = requirement(out["modes"])
    misses = [
        f"demo: {label} below the peer by more than 0.02"
        for label in ("hybrid-rrf", "hybrid-dbsf")
        if not out["requirement"][label]["ok"]
    ]
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print_report(out, args.dtype, args.pool_factor)
    return misses


if __name__ == "__main__":
    main()
