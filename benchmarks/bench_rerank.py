"""Rerankers and labels, each against a peer measured in the same run.

    python benchmarks/bench_rerank.py [--pairs N] [--threads N] [--docs N] [--searches N]
                                      [--chunks N] [--only score|latency|labels]

The models are real-size with random weights (no hub): a MiniLM-L6 cross-encoder (the bundled
all-MiniLM-L6-v2 backbone and a random one-label head: ms-marco-MiniLM-L-6-v2's architecture)
and a three-label classifier on the same MiniLM backbone (``tests/rerank_checkpoints.py``).

1. **score**: ``poolq encode PAIRS.jsonl --task score`` against sentence-transformers
   ``CrossEncoder.predict`` (batch 32), each a whole process (a fresh interpreter: imports, model
   load, reading, scoring, writing), the same ``--threads``, on ``--pairs`` (query, passage)
   pairs of varied length. Cost is CPU ms per pair of each process (``getrusage`` of the child);
   the ratio is the peer's over poolq's. Target >= 1.5x. The two outputs must agree to 1e-4.
2. **latency**: a real worker with ``[reranker]`` (30 candidates) answers searches one at a time,
   with the reranker and without (``reranker=False``) alternately, first idle, then right after
   enqueueing ``--docs`` documents of bulk ingestion, as ``bench_search_latency.py`` does. p50
   and p95 of the wall time and of the reranker's stage (``rerank_s``). Target: the stage's p95
   under the backlog within 2x its idle p95 (and the backlog still queued at the end).
3. **labels**: chunks/s of ``Vectorizer.encode`` on the default profile, and with ``[labels]``
   naming the classifier on its MiniLM backbone (it reads MiniLM's forward), against the
   classifier's own forward over the same chunks in an engine of its own. Target: labels add no
   more than that forward.

Exit status 1 on any miss.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("POOLQ_AUTO_BF16", "0")  # fp32 on both sides of every comparison
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.procs import cpu_pressure  # noqa: E402
from poolq.ingest.sample_corpus import passages  # noqa: E402
from tests.rerank_checkpoints import build_classifier, build_minilm_cross_encoder  # noqa: E402

QUERIES = ROOT / "benchmarks" / "search_queries.jsonl"
SCORE_TARGET = 1.5
LATENCY_TARGET = 2.0
CE_SCRIPT = """
import json, sys, torch
torch.set_num_threads(int(sys.argv[3]))
from sentence_transformers import CrossEncoder
model = CrossEncoder(sys.argv[1], device="cpu")
rows = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8")]
scores = model.predict([(r["query"], r["text"]) for r in rows], batch_size=32)
with open(sys.argv[4], "w", encoding="utf-8") as out:
    for r, s in zip(rows, scores):
        out.write(json.dumps({"id": r["id"], "score": float(s)}) + "\\n")
"""


def queries() -> list[str]:
    return [json.loads(line)["query"] for line in QUERIES.read_text().splitlines() if line]


def pairs_file(path: Path, n: int) -> None:
    """``n`` pairs: a query and a passage cut to 5..400 words (some over the 512-token window)."""
    rng = random.Random(0)
    texts, qs = passages(2 * n), queries()
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            words = " ".join(
                texts[(2 * i) % len(texts)].split() + texts[(2 * i + 1) % len(texts)].split()
            )
            cut = " ".join(words.split()[: rng.choice([5, 20, 60, 120, 250, 400])])
            f.write(json.dumps({"id": i, "query": qs[i % len(qs)], "text": cut}) + "\n")


def child_cpu_s(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one whole child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({r.returncode}): {r.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def bench_score(model: Path, tmp: Path, args: argparse.Namespace) -> list[str]:
    src = tmp / "pairs.jsonl"
    pairs_file(src, args.pairs)
    env = {**os.environ}
    ours_out, peer_out = tmp / "ours.jsonl", tmp / "peer.jsonl"
    ours = [sys.executable, "-m", "poolq.worker", "encode", str(src), "--model", str(model),
            "--task", "score", "--threads", str(args.threads), "-o", str(ours_out)]  # fmt: skip
    peer = [sys.executable, "-c", CE_SCRIPT, str(model), str(src), str(args.threads), str(peer_out)]
    runs: dict[str, list[tuple[float, float]]] = {"poolq": [], "peer": []}
    for _ in range(args.repeats):  # alternate, best of each: the machine is shared
        runs["poolq"].append(child_cpu_s(ours, env))
        runs["peer"].append(child_cpu_s(peer, env))
    a = [json.loads(line)["score"] for line in ours_out.read_text().splitlines()]
    b = [json.loads(line)["score"] for line in peer_out.read_text().splitlines()]
    diff = float(np.abs(np.array(a) - np.array(b)).max())
    n = args.pairs
    best = {k: (min(w for w, _ in v), min(c for _, c in v)) for k, v in runs.items()}
    cpu_ratio = best["peer"][1] / best["poolq"][1]
    wall_ratio = best["peer"][0] / best["poolq"][0]
    print(f"\n1. score: {n} pairs, threads {args.threads}, whole processes, best of {args.repeats}")
    print(f"{'':34s} {'wall s':>8s} {'CPU s':>8s} {'CPU ms/pair':>12s} {'pairs/s':>8s}")
    for name, label in (
        ("poolq", "poolq encode --task score"),
        ("peer", "CrossEncoder.predict (bs 32)"),
    ):
        w, c = best[name]
        print(f"{label:34s} {w:8.2f} {c:8.2f} {1e3 * c / n:12.2f} {n / w:8.1f}")
    print(f"ratio (peer / poolq): CPU {cpu_ratio:.2f}x, wall {wall_ratio:.2f}x (target CPU >= "
          f"{SCORE_TARGET}x); max |score diff| {diff:.2e}")  # fmt: skip
    misses = []
    if cpu_ratio < SCORE_TARGET:
        misses.append(f"score: CPU ratio {cpu_ratio:.2f}x < {SCORE_TARGET}x")
    if diff > 1e-4:
        misses.append(f"score: poolq and CrossEncoder differ by {diff:.2e} > 1e-4")
    return misses


@dataclass
class Sample:
    reranked: bool
    wall_s: float
    rerank_s: float | None


async def _searches(client, qs: list[str], n: int, interval_s: float) -> list[Sample]:
    out = []
    start = time.perf_counter()
    for i in range(2 * n):
        delay = start + i * interval_s - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        rerank = i % 2 == 0
        t0 = time.perf_counter()
        res = await client.search(qs[(i // 2) % len(qs)], "search", reranker=rerank, timeout_s=300)
        out.append(Sample(rerank, time.perf_counter() - t0, res.rerank_s))
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def bench_latency(model: Path, tmp: Path, args: argparse.Namespace) -> list[str]:
    from poolq.ingest.client import PoolqClient
    from poolq.wire import constants
    from poolq.worker.dev.local_redis import LocalRedis
    from poolq.worker.dev.local_worker import WorkerProcess

    config = tmp / "poolq.toml"
    config.write_text(f'[reranker]\nmodel = "{model}"\ncandidates = 30\n')
    qs = queries()

    async def run(url: str) -> tuple[list[Sample], list[Sample], int, int]:
        async with PoolqClient(url) as client:
            docs = [{"id": f"s-{i}", "text": t} for i, t in enumerate(passages(400))]
            await client.wait(await client.enqueue("search", docs, job_size=32), timeout_s=1800)
            for q in qs[:4]:  # warm-up
                await client.search(q, "search")
                await client.search(q, "search", reranker=False)
            idle = await _searches(client, qs, args.searches, args.interval)
            backlog = [{"id": f"b-{i}", "text": f"(copy {i}) " + t}
                       for i, t in enumerate(passages(args.docs))]  # fmt: skip
            await client.enqueue("backlog", backlog, job_size=32)
            queued = await client.redis.zcard(constants.INGEST_QUEUE)
            busy = await _searches(client, qs, args.searches, args.interval)
            left = await client.redis.zcard(constants.INGEST_QUEUE)
        return idle, busy, queued, left

    with (
        LocalRedis(tmp / "redis") as redis_server,
        WorkerProcess(
            redis_server.url, tmp / "qdrant", "--config", str(config), log=tmp / "worker.log"
        ),  # fmt: skip
    ):
        idle, busy, queued, left = asyncio.run(run(redis_server.url))
    print(f"\n2. latency: {args.searches} searches each with and without the reranker (30 "
          f"candidates), one every {args.interval}s, idle then under a backlog of {args.docs} "
          f"documents ({queued} ingest jobs waiting in the queue at its start, {left} when the "
          f"last search returned)")  # fmt: skip
    print(
        f"{'ms':28s} {'idle p50':>9s} {'idle p95':>9s} {'backlog p50':>12s} {'backlog p95':>12s} {'p95 ratio':>10s}"
    )
    rows = [
        ("wall, with reranker", lambda s: s.wall_s, True),
        ("wall, without", lambda s: s.wall_s, False),
        ("rerank_s (the stage)", lambda s: s.rerank_s or 0.0, True),
    ]
    ratios = {}
    for name, get, rerank in rows:
        i = [get(s) for s in idle if s.reranked == rerank]
        b = [get(s) for s in busy if s.reranked == rerank]
        ratios[name] = pct(b, 95) / pct(i, 95)
        print(f"{name:28s} {1e3 * pct(i, 50):9.1f} {1e3 * pct(i, 95):9.1f} {1e3 * pct(b, 50):12.1f} "
              f"{1e3 * pct(b, 95):12.1f} {ratios[name]:9.2f}x")  # fmt: skip
    stage = ratios["rerank_s (the stage)"]
    print(
        f"the reranker's p95 under the backlog / idle: {stage:.2f}x (target <= {LATENCY_TARGET}x)"
    )
    misses = []
    if stage > LATENCY_TARGET:
        misses.append(f"latency: rerank_s p95 {stage:.2f}x its idle p95 > {LATENCY_TARGET}x")
    if left == 0:
        misses.append("latency: the backlog drained before the last search (raise --docs)")
    return misses


def bench_labels(classifier: Path, args: argparse.Namespace) -> list[str]:
    from poolq.worker.config.profile import Profile
    from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
    from poolq.worker.engine.engine import AsyncEngine
    from poolq.worker.engine.process_options import set_process_options
    from poolq.worker.runtime.vectorizer import Vectorizer

    set_process_options(auto_bf16=False)  # "auto" is float32 here, as in the worker above

    async def run() -> dict[str, float]:
        plain = await Vectorizer.start(Profile.from_dict(None))
        labelled = await Vectorizer.start(
            Profile.from_dict({"labels": {"topic": {"model": str(classifier)}}})
        )
        assert str(classifier) not in labelled.engines, "the classifier must share MiniLM"
        chunks = [c.text for cs in plain.chunk_many(passages(args.chunks)) for c in cs]
        texts = chunks[: args.chunks]
        ids = [str(i) for i in range(len(texts))]
        alone = AsyncEngine(load_model(ModelConfig(str(classifier), dtype="float32")))
        await alone.start()
        best = {"without labels": 1e9, "with labels": 1e9, "classifier alone": 1e9}
        await plain.encode(texts[:32], ids[:32])  # warm-up, not measured
        await labelled.encode(texts[:32], ids[:32])
        await alone.encode(texts[:32], ["classify"])
        for _ in range(args.repeats):
            for name, go in (
                ("without labels", lambda: plain.encode(texts, ids)),
                ("with labels", lambda: labelled.encode(texts, ids)),
                ("classifier alone", lambda: alone.encode(texts, ["classify"])),
            ):
                t0 = time.perf_counter()
                await go()
                best[name] = min(best[name], time.perf_counter() - t0)
        await asyncio.gather(plain.stop(), labelled.stop(), alone.stop())
        best["n"] = len(texts)
        return best

    t = asyncio.run(run())
    n = int(t.pop("n"))
    print(f"\n3. labels: {n} chunks through Vectorizer.encode (default profile), best of "
          f"{args.repeats}")  # fmt: skip
    for name, s in t.items():
        print(f"{name:22s} {s:7.2f} s {n / s:8.1f} chunks/s")
    added = t["with labels"] - t["without labels"]
    forward = t["classifier alone"]
    print(f"labels add {added:+.2f} s, {100 * added / forward:+.0f}% of the classifier's own "
          f"forward ({forward:.2f} s; target: no more than it)")  # fmt: skip
    return (
        [] if added <= forward else [f"labels: add {added:.2f} s > their forward {forward:.2f} s"]
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--repeats", type=int, default=3, help="runs of each, alternating (best)")
    ap.add_argument("--docs", type=int, default=4000, help="documents in the bulk backlog")
    ap.add_argument("--searches", type=int, default=20, help="searches per kind and condition")
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--chunks", type=int, default=1000)
    ap.add_argument("--only", choices=("score", "latency", "labels"))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="poolq-bench-rerank-"))
    reranker = build_minilm_cross_encoder(tmp / "reranker")
    classifier = build_classifier(tmp / "topic", on_minilm=True)
    print(f"machine: load {os.getloadavg()[0]:.2f}, CPU pressure {cpu_pressure()}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    misses: list[str] = []
    if args.only in (None, "score"):
        misses += bench_score(reranker, tmp, args)
    if args.only in (None, "latency"):
        misses += bench_latency(reranker, tmp, args)
    if args.only in (None, "labels"):
        misses += bench_labels(classifier, args)
    print(f"\nmachine at the end: load {os.getloadavg()[0]:.2f}, CPU pressure {cpu_pressure()}")
    if misses:
        print(f"MISS: {'; '.join(misses)}", file=sys.stderr)
        sys.exit(1)
    print("all targets met")


if __name__ == "__main__":
    main()
