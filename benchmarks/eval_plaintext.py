"""The plain-text set, measured: ``eval_search.py --set plain`` and ``eval_documents.py --plain``
run it. The man pages (``eval_plaintext_corpus.py``) are indexed as a folder of ``.txt`` files
with poolq's defaults through a real worker (``poolq enqueue FOLDER --wait``: the parse stage,
then chunking), and with ``jsonl`` also as the same texts sent as JSON lines (no parse stage,
no layout) into a second collection; every question is asked in every mode and in the default
one (no mode given), at document level (hits grouped by ``doc_id``, limit 10).

Per mode: hit@1 and hit@3 (a page that answers is the first hit, or among the first 3), MRR@10
and recall@10 (the share of the question's pages among the first 10), over all questions.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.eval_plaintext_corpus import build, jsonl_documents, load_questions, page_of
from poolq.ingest.client import PoolqClient
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

MODES = ("dense", "sparse", "hybrid", "rerank", "default")  # "default": no mode given
K = 10
METRICS = ("hit@1", "hit@3", "mrr@10", "recall@10")


def enqueue(url: str, source: Path, collection: str) -> dict[str, Any]:
    """``poolq enqueue SOURCE --collection C --wait --json``'s summary."""
    cmd = [sys.executable, "-m", "poolq.worker", "enqueue", str(source), "--collection",
           collection, "--wait", "--json", "--redis-url", url]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=7200)
    if r.returncode != 0:
        raise SystemExit(f"poolq enqueue {source} failed ({r.returncode}): {r.stderr[-2000:]}")
    summary: dict[str, Any] = json.loads(r.stdout.splitlines()[-1])
    return summary


def scored(q: dict[str, Any], pages: list[str | None]) -> dict[str, Any]:
    """One question's verdicts from its ranked pages (each document once, best first)."""
    relevant = set(q["pages"])
    rank = next((i + 1 for i, p in enumerate(pages[:K]) if p in relevant), None)
    return {"id": q["id"], "kind": q["kind"], "rank": rank, "top": pages[:3],
            "recall": len(relevant & set(pages[:K])) / len(relevant)}  # fmt: skip


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = max(1, len(rows))
    return {
        "hit@1": sum(r["rank"] == 1 for r in rows) / n,
        "hit@3": sum(r["rank"] is not None and r["rank"] <= 3 for r in rows) / n,
        "mrr@10": sum(1 / r["rank"] for r in rows if r["rank"]) / n,
        "recall@10": sum(r["recall"] for r in rows) / n,
    }


async def ask(url: str, collection: str, questions: list[dict[str, Any]]) -> dict[str, Any]:
    """Every question in every mode: per mode its rows and summary (and the default's mode)."""
    out: dict[str, Any] = {}
    async with PoolqClient(url) as client:
        for mode in MODES:
            rows, ran = [], set()
            for q in questions:
                res = await client.search(
                    q["question"], collection, mode=None if mode == "default" else mode, limit=K
                )  # type: ignore[arg-type]
                ran.add(res.mode)
                pages = list(dict.fromkeys(page_of(h.doc_id) for h in res.hits))
                rows.append(scored(q, pages))
            out[mode] = {"summary": summary(rows), "rows": rows, "ran": sorted(ran)}
    return out


def run(out: Path, *, jsonl: bool = False, worker_args: tuple[str, ...] = ()) -> dict[str, Any]:
    """Build, index and ask (see the module docstring); the results are also written to
    ``OUT/plain-results.json``."""
    folder = out / "man"
    manifest = build(folder)
    questions = load_questions(folder)
    run_dir = out / "plain-run"
    subprocess.run(["rm", "-rf", str(run_dir)], check=True)
    run_dir.mkdir(parents=True)
    sources = {"folder": folder}
    if jsonl:
        lines = run_dir / "man.jsonl"
        docs = jsonl_documents(folder)
        lines.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
        sources["jsonl"] = lines
    results: dict[str, Any] = {"corpus": manifest, "questions": len(questions), "sets": {}}
    with (
        LocalRedis(run_dir / "redis") as redis,
        WorkerProcess(redis.url, run_dir / "qdrant", *worker_args, log=run_dir / "worker.log"),
    ):
        for name, source in sources.items():
            t0 = time.perf_counter()
            ingest = enqueue(redis.url, source, f"plain-{name}")
            seconds = time.perf_counter() - t0
            modes = asyncio.run(ask(redis.url, f"plain-{name}", questions))
            results["sets"][name] = {
                "documents": ingest.get("documents"), "points": ingest.get("points"),
                "ingest_s": seconds, "modes": modes,
            }  # fmt: skip
    (out / "plain-results.json").write_text(json.dumps(results, indent=1))
    return results


def table(results: dict[str, Any]) -> list[str]:
    """Markdown rows: one per set and mode, the counts of questions and MRR/recall."""
    n = results["questions"]
    lines = [
        f"| set | mode | hit@1 (of {n}) | hit@3 | MRR@10 | recall@10 |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, s in results["sets"].items():
        for mode, m in s["modes"].items():
            label = f"default ({', '.join(m['ran'])})" if mode == "default" else mode
            v = m["summary"]
            lines.append(f"| {name} | {label} | {round(v['hit@1'] * n)} | {round(v['hit@3'] * n)} "
                         f"| {v['mrr@10']:.3f} | {v['recall@10']:.3f} |")  # fmt: skip
    return lines


def default_vs_dense(modes: dict[str, Any]) -> list[str]:
    """The misses of the requirement: the default mode at least as good as dense on hit@1 and
    hit@3 (the right page first, and among the first 3)."""
    d, x = modes["default"]["summary"], modes["dense"]["summary"]
    return [
        f"default {k} {d[k]:.3f} below dense {x[k]:.3f}"
        for k in ("hit@1", "hit@3")
        if d[k] < x[k] - 1e-9
    ]
