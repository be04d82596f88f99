"""Document search quality: do poolq's hits name the right file, and the right page of a PDF?

    python benchmarks/eval_documents.py [--out build/eval-documents] [--json]
    python benchmarks/eval_documents.py --plain   # the plain-text case (eval_plaintext.py)

Builds the corpus (``benchmarks/eval_documents_corpus.py``: real Debian documentation, PDF and
HTML, and made PDF, DOCX, PPTX, EPUB and HTML files), keeps the questions of
``benchmarks/eval_documents_questions.jsonl`` whose answer phrase is found in exactly their file
(and, in a PDF or PPTX, on exactly their page), indexes the folder with poolq's defaults through
a real worker (``poolq enqueue FOLDER --wait``) and asks every question in each search mode:

* document hit@3: the right file is among the first 3 document hits (``hit.citation.source``);
* page hit@3 (PDF questions): a cited page range (``citation.page_start..page_end``) of one of
  those hits from the right file, or of one of its listed chunks (``hit.chunks``), holds the
  right page and spans at most 2 pages: the page (or spread) a reader would open;
* doc hit@1, for the ranking at the top.

The naive baseline (``benchmarks/eval_documents_baseline.py``: pypdf/selectolax/python-docx text
in 1,000-character windows, MiniLM dense only, a window's page the page it starts on) is indexed
and asked in the same run. Questions are everyday phrasings written by reading the documents,
not copies of the answer sentence; they were written once and not tuned to any mode's results.

Every chunk poolq stored is also checked for leftovers of the formats: tags, entities and
braces that the file's visible text does not hold, page chrome (a PDF's running header or
footer line) and web page boilerplate (navigation, cookie bars, footers).

``--plain`` measures the plain-text case instead: 452 man pages rendered to text, indexed as
a folder of ``.txt`` files and as the same texts in JSON lines (``eval_plaintext.py``); exit
status 1 when the folder's default mode finds the right page first, or among the first 3,
less often than dense.

Exit status 1 when poolq's best mode (highest page hit@3, then doc hit@3, then doc hit@1) does
not beat the baseline on page hit@3 or falls more than 2 points below it on doc hit@3; else 3
when a chunk holds leftovers; else 0. ``OUT/results.json`` has every question's top hits per
mode, the leftovers found and the commit measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.eval_documents_baseline import top_files, windows, write_jsonl
from benchmarks.eval_documents_corpus import build, check_questions, norm, page_texts
from benchmarks.eval_documents_report import plain_case, report
from poolq.ingest.client import PoolqClient
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.parse.made_files import BOILERPLATE_TEXTS

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "benchmarks" / "eval_documents_questions.jsonl"
MODES = ("dense", "sparse", "hybrid", "rerank")
K = 3
SPAN = 2  # a cited range of more pages than this names no page (a short PDF's "p.1–6")
# page furniture of the real HTML pages (Sphinx sidebars and footers) and of the made ones
BOILERPLATE = (*BOILERPLATE_TEXTS, "Report a Bug", "Show Source", "Previous topic",
               "Navigation index", "Copyright 2001", "Created using Sphinx")  # fmt: skip
TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*(?:\s[^<>]{0,80})?/?>|&(?:[a-z]+|#\d+);")


def poolq(*args: str) -> dict[str, Any]:
    r = subprocess.run([sys.executable, "-m", "poolq.worker", *args], capture_output=True,
                       text=True, timeout=3600)  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"poolq {args[0]} failed ({r.returncode}): {r.stderr[-2000:]}")
    return json.loads(r.stdout)


def _ranges(hit: Any) -> list[tuple[int, int]]:
    cites = [hit.citation, *(c.citation for c in hit.chunks or [])]
    return [(c.page_start, c.page_end or c.page_start) for c in cites if c.page_start]


async def ask(url: str, questions: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each question's top-3 documents per mode: (file, cited page ranges) and the verdicts."""
    rows: dict[str, list[dict[str, Any]]] = {m: [] for m in (*MODES, "baseline")}
    async with PoolqClient(url) as client:
        for q in questions:
            for mode in MODES:
                res = await client.search(q["question"], "docs", mode=mode, limit=K)
                top = [(h.citation.source, _ranges(h)) for h in res.hits[:K]]
                rows[mode].append(_verdict(q, top))
            res = await client.search(
                q["question"], "baseline", mode="dense", limit=100, group_by=None
            )
            files = top_files(res.hits, K)
            top = [(f, [(p, p) for p in pages if p]) for f, pages in files]
            rows["baseline"].append(_verdict(q, top))
    return rows


def _verdict(q: dict[str, Any], top: list[tuple[str | None, list[tuple[int, int]]]]) -> dict:
    doc = [f for f, _ in top]
    pdf = q["file"].endswith(".pdf")
    page = pdf and any(
        f == q["file"] and a <= q["page"] <= b < a + SPAN for f, ranges in top for a, b in ranges
    )
    return {"id": q["id"], "real": q["file"].startswith("real/"), "doc@3": q["file"] in doc, "doc@1": doc[:1] == [q["file"]],
            "page@3": page if pdf else None, "top": top}  # fmt: skip


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Percentages: doc hit@3, page hit@3 (PDF questions; also real and made PDFs apart),
    doc hit@1."""

    def pct(key: str, sub: list[dict[str, Any]]) -> float:
        return 100 * sum(r[key] for r in sub) / max(1, len(sub))

    pdf = [r for r in rows if r["page@3"] is not None]
    return {
        "doc@3": pct("doc@3", rows),
        "page@3": pct("page@3", pdf),
        "doc@1": pct("doc@1", rows),
        "page@3 real": pct("page@3", [r for r in pdf if r["real"]]),
        "page@3 made": pct("page@3", [r for r in pdf if not r["real"]]),
    }


def _chrome_lines(pages: list[str]) -> tuple[list[re.Pattern[str]], set[str]]:
    """A PDF's running header/footer lines, among the first or last two lines of its pages:
    (patterns of the lines that differ by their numbers only, on 3 pages or more: "Chapter 11:
    Statistical models in R 67", any number standing for the page's; lines the same on over
    half of the pages)."""
    seen: dict[str, set[str]] = {}
    pages_with: dict[str, int] = {}
    for text in pages:
        lines = [" ".join(x.split()) for x in text.splitlines() if x.strip()]
        keys = set()
        for line in lines[:2] + lines[-2:]:
            key = re.sub(r"\d+", "#", line.casefold())
            if len(re.findall(r"[^\W\d_]{2,}", key)) >= 2:  # words, not "Chapter 3" alone
                seen.setdefault(key, set()).add(line)
                keys.add(key)
        for key in keys:
            pages_with[key] = pages_with.get(key, 0) + 1
    varying = [
        re.compile(re.escape(k).replace("\\#", r"\d+").replace("\\ ", r"\s*"), re.I)
        for k, n in pages_with.items()
        if n >= 3 and len(seen[k]) > 1
    ]
    constant = {
        x
        for k, n in pages_with.items()
        if len(pages) >= 4 and n > len(pages) / 2 and len(seen[k]) == 1
        for x in seen[k]
    }
    return varying, constant


def stored_chunks(qdrant: Path) -> list[dict[str, Any]]:
    """Every point of the ``docs`` collection: its source, pages and text."""
    from poolq.sinks.store.edge import EdgeStore

    store = EdgeStore(qdrant)
    chunks: list[dict[str, Any]] = []
    try:
        offset = None
        while True:
            page, offset = store.scroll("docs", limit=512, offset=offset)
            chunks += [r.payload or {} for r in page]
            if offset is None:
                return chunks
    finally:
        store.close()


def chunk_problems(chunks: list[dict[str, Any]], corpus: Path) -> list[str]:
    """Chunks holding markup (tags, entities, braces that the file's visible text lacks; tags
    and entities outside PDFs), a PDF's running header or footer, or page boilerplate."""
    by_source: dict[str, list[str]] = {}
    for c in chunks:
        by_source.setdefault(str(c.get("source")), []).append(" ".join(c["text"].split()))
    problems = []
    for source, texts in sorted(by_source.items()):
        pages = page_texts(corpus / source)
        visible = " ".join(" ".join(pages).split())
        pdf = source.endswith(".pdf")
        varying, constant = _chrome_lines(pages) if pdf else ([], set())
        for t in texts:
            bad = [] if pdf else [m for m in TAG.findall(t) if m not in visible]
            bad += [c for c in "<{}" if c in t and c not in visible]
            bad += [b for b in BOILERPLATE if b in t]
            bad += [m.group() for p in varying for m in [p.search(t)] if m]
            if bad:
                problems.append(f"{source}: {sorted(set(bad))[:3]} in {t[:160]!r}")
        for line in constant:
            share = sum(line in t for t in texts) / len(texts)
            if share > 0.2:
                problems.append(f"{source}: the line {line!r} is in {share:.0%} of its chunks")
    return problems


def answer_citations(chunks: list[dict[str, Any]], questions: list[dict[str, Any]]) -> dict:
    """Parsing and citing apart from ranking: per question, is the answer phrase whole in a
    chunk of its file, and (PDF) does every such chunk's cited page range hold its page?"""
    texts = [(c.get("source"), c.get("page_start"), c.get("page_end"), norm(c["text"]))
             for c in chunks]  # fmt: skip
    whole, cited, wrong = 0, 0, []
    pdf = [q for q in questions if q["file"].endswith(".pdf")]
    for q in questions:
        phrase = norm(q["answer"])
        found = [(a, b) for f, a, b, t in texts if f == q["file"] and phrase in t]
        whole += bool(found)
        if q in pdf and found:
            ok = all(a is not None and a <= q["page"] <= (b or a) < a + SPAN for a, b in found)
            cited += ok
            wrong += [] if ok else [f"{q['id']}: page {q['page']}, cited {found}"]
    return {"whole": f"{whole}/{len(questions)}", "cited": f"{cited}/{len(pdf)}", "wrong": wrong}


def measure(out_dir: Path, questions_path: Path = QUESTIONS) -> tuple[dict[str, Any], int]:
    """Build, index and ask (the module docstring); the results (also written to
    ``OUT/results.json``) and the exit status."""
    corpus = out_dir / "corpus"
    entries = build(corpus)
    questions = [json.loads(x) for x in questions_path.read_text().splitlines() if x.strip()]
    kept, dropped = check_questions(corpus, questions)
    for d in dropped:
        print(f"dropped {d}", file=sys.stderr)
    run = out_dir / "run"
    subprocess.run(["rm", "-rf", str(run)], check=True)
    run.mkdir(parents=True)
    write_jsonl(windows(corpus, [str(e["file"]) for e in entries]), run / "baseline.jsonl")
    with (
        LocalRedis(run / "redis") as redis,
        WorkerProcess(redis.url, run / "qdrant", log=run / "worker.log"),
    ):
        flags = ("--wait", "--json", "--redis-url", redis.url)
        ingest = {
            name: poolq("enqueue", str(src), "--collection", name, *flags)
            for name, src in (("docs", corpus), ("baseline", run / "baseline.jsonl"))
        }
        rows = asyncio.run(ask(redis.url, kept))
        default = asyncio.run(default_mode(redis.url, kept[0]["question"]))
    chunks = stored_chunks(run / "qdrant")
    problems = chunk_problems(chunks, corpus)
    citations = answer_citations(chunks, kept)
    table = {mode: summary(r) for mode, r in rows.items()}
    best = max(MODES, key=lambda m: (table[m]["page@3"], table[m]["doc@3"], table[m]["doc@1"]))
    base = table["baseline"]
    fails = []
    if table[best]["page@3"] <= base["page@3"]:
        fails.append(f"{best} does not beat the baseline on page hit@3")
    if table[best]["doc@3"] < base["doc@3"] - 2:
        fails.append(f"{best} is over 2 points below the baseline on doc hit@3")
    status = 1 if fails else 3 if problems else 0
    if problems:
        fails.append(f"{len(problems)} of {len(chunks)} chunks hold markup, chrome or boilerplate")
    head = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    out = {"commit": head, "files": entries, "questions": len(kept), "pdf_questions": sum(
        q["file"].endswith(".pdf") for q in kept), "dropped": dropped, "table": table,
        "best": best, "default": default, "fails": fails, "chunk_problems": problems,
        "citations": citations, "rows": rows,
        "ingest": {k: {f: v.get(f) for f in ("documents", "points", "seconds")}
                   for k, v in ingest.items()}}  # fmt: skip
    (out_dir / "results.json").write_text(json.dumps(out, indent=1))
    return out, status


async def default_mode(url: str, question: str) -> str:
    """The mode a search runs when it names none (``rerank`` with the default profile)."""
    async with PoolqClient(url) as client:
        return (await client.search(question, "docs", limit=K)).mode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "eval-documents")
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument(
        "--plain",
        action="store_true",
        help="the plain-text case instead: man pages as a folder of .txt files and as JSON "
        "lines (benchmarks/eval_plaintext.py)",
    )
    args = ap.parse_args()
    if args.plain:
        sys.exit(plain_case(args.out, args.json))
    out, status = measure(args.out, args.questions)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        report(out)
    sys.exit(status)


if __name__ == "__main__":
    main()
