"""Steady-state chunks/s of a worker's encode path on the OpenVINO backend (int8) against raw
OpenVINO int8, in one process, on the same chunks of a corpus of mixed lengths.

* **poolq**: a :class:`Vectorizer`, what ``poolq worker`` runs for each job (``pipeline.py``):
  the job's documents chunked off the event loop (``chunk_many``), then every chunk encoded
  with the chunker's tokens (``encodings``), a job's chunks queued at once, ``--in-flight`` jobs
  of ``--job-size`` documents at a time. Profile: one ``embed`` vector of the bundled MiniLM,
  ``dtype = "int8"``, ``POOLQ_BACKEND=openvino``. Store writes are not part of it
  (``bench_host_path.py`` measures the host path around the model).
* **raw OpenVINO int8**: the NNCF static int8 IR of ``bench_cpu_peers.py`` (``peer_models.py``,
  calibrated on other passages) run as its peer runs (``peer_run.py``: tokenize, 32 texts
  sorted by length and padded to the batch's longest, mean pooling, L2 norm), compiled with
  OpenVINO's defaults and the same thread count, on the chunk texts poolq encoded.

Corpus: ``--docs`` standard-library passages (``ingest/sample_corpus.py``): 3 to over 256
tokens, the longer split by the chunker at MiniLM's 256. Steady state: start-up excluded, one
untimed pass each first; then rounds alternate the two and each figure is its best round. The
1-minute load, CPU pressure (PSI) and CPU steal are printed beside each round.

    python benchmarks/bench_ov_worker.py [--docs 1080] [--rounds 3] [--work DIR]
                                         [--max-batch-tokens N] [--job-size 32] [--in-flight 4]

Target: poolq >= 1.2x raw OpenVINO int8 chunks/s; exit status 1 on a miss.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from benchmarks.peer_run import padded_feeds
from benchmarks.procs import cpu_counters, pressure_avg10, steal_pct, wait_quiet
from poolq.ingest.sample_corpus import passages
from tests.models import minilm_path

TARGET = 1.2


def raw_openvino(ir: Path, model: Path, threads: int):  # type: ignore[no-untyped-def]
    """The peer: ``texts -> [n, 384]`` as ``peer_run.py`` runs an OpenVINO IR."""
    import openvino as ov
    from tokenizers import Tokenizer

    from benchmarks.peer_run import mean_pool

    compiled = ov.Core().compile_model(
        str(ir), "CPU", {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"}
    )
    request = compiled.create_infer_request()
    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    tok.enable_truncation(256)
    tok.no_padding()

    def encode(texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), 384), dtype=np.float32)
        for rows, feed in padded_feeds(tok.encode_batch(texts)):
            mask = feed["attention_mask"]
            hidden = next(iter(request.infer(feed).values()))
            out[rows] = mean_pool(hidden, mask)
        return out

    return encode


async def poolq_pass(vec, docs: list[str], job_size: int, in_flight: int) -> int:  # type: ignore[no-untyped-def]
    """Every document through the worker's encode path once; the number of chunks."""
    gate = asyncio.Semaphore(in_flight)
    counts: list[int] = []

    async def job(k: int, part: list[str]) -> None:
        async with gate:
            chunked = await asyncio.to_thread(vec.chunk_many, part)
            texts = [c.text for cs in chunked for c in cs]
            ids = [f"{k}-{i}#{c.index}" for i, cs in enumerate(chunked) for c in cs]
            encodings = [c.encodings for cs in chunked for c in cs]
            out = await vec.encode(texts, ids, group=f"job-{k}", encodings=encodings)
            bad = [o for o in out if isinstance(o, Exception)]
            if bad:
                raise SystemExit(f"poolq: {len(bad)} chunks failed: {bad[0]}")
            counts.append(len(texts))

    parts = [docs[a : a + job_size] for a in range(0, len(docs), job_size)]
    await asyncio.gather(*(job(k, p) for k, p in enumerate(parts)))
    return sum(counts)


def state() -> str:
    return f"load {os.getloadavg()[0]:.2f}, PSI {pressure_avg10():.0f}%"


async def run(args: argparse.Namespace, ir: Path) -> int:
    from poolq.worker.config.profile import Profile
    from poolq.worker.runtime.vectorizer import Vectorizer

    model = minilm_path()
    profile = Profile.from_dict(
        {
            "vectors": {"dense": {"model": str(model), "task": "embed"}},
            "models": {str(model): {"dtype": "int8"}},
        }
    )
    docs = passages(args.docs)
    t0 = time.perf_counter()
    vec = await Vectorizer.start(profile, max_batch_tokens=args.max_batch_tokens)
    print(f"poolq worker encode path started in {time.perf_counter() - t0:.2f} s")
    try:
        engine = vec.engines[str(model)]
        backend = type(engine.model.encoder).__name__
        if backend != "OpenVinoEncoder":
            raise SystemExit(f"poolq: expected the OpenVINO backend, got {backend}")
        texts = [c.text for cs in vec.chunk_many(docs) for c in cs]
        t0 = time.perf_counter()
        raw = raw_openvino(ir, model, args.threads)
        print(f"raw OpenVINO int8 compiled in {time.perf_counter() - t0:.2f} s")
        chunks = await poolq_pass(vec, docs, args.job_size, args.in_flight)  # warm
        raw(texts)
        assert chunks == len(texts), (chunks, len(texts))
        lengths = [len(e.ids) for e in engine.model.tokenizer.encode_batch(texts)]
        print(
            f"{len(docs)} passages -> {chunks} chunks, {sum(lengths)} MiniLM tokens "
            f"(min {min(lengths)}, median {int(np.median(lengths))}, max {max(lengths)}); "
            f"jobs of {args.job_size} documents, {args.in_flight} in flight; "
            f"{args.threads} threads; {getattr(engine.model.encoder, 'streams', 1)} OpenVINO streams; "
            f"batches of {args.max_batch_tokens or 'the default'} tokens"
        )
        best = {"poolq": float("inf"), "raw": float("inf")}
        for r in range(args.rounds):
            for name in ("poolq", "raw") if r % 2 == 0 else ("raw", "poolq"):
                wait_quiet(max_wait_s=args.max_wait)
                before, at_start = cpu_counters(), state()
                t0 = time.perf_counter()
                if name == "poolq":
                    await poolq_pass(vec, docs, args.job_size, args.in_flight)
                else:
                    await asyncio.to_thread(raw, texts)
                s = time.perf_counter() - t0
                best[name] = min(best[name], s)
                print(
                    f"round {r} {name:5s}: {s:6.2f} s, {chunks / s:7.1f} chunks/s "
                    f"({at_start}, steal {steal_pct(before, cpu_counters()):.1f}%)"
                )
    finally:
        await vec.stop()
    ours, theirs = chunks / best["poolq"], chunks / best["raw"]
    ratio = ours / theirs
    print(f"\nbest of {args.rounds}: poolq (openvino int8) {ours:.1f} chunks/s, ", end="")
    print(f"raw OpenVINO int8 {theirs:.1f} chunks/s")
    ok = ratio >= TARGET
    print(f"steady chunks/s vs raw OpenVINO int8: {ratio:.2f}x (target {TARGET}x) ", end="")
    print("ok" if ok else "MISS")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=1080)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--job-size", type=int, default=32)
    ap.add_argument("--in-flight", type=int, default=4)
    ap.add_argument(
        "--max-batch-tokens", type=int, default=None, help="the engine's (default: 2048 on CPU)"
    )
    ap.add_argument("--max-wait", type=float, default=60, help="seconds to wait for a quiet CPU")
    ap.add_argument("--work", type=Path, default=None, help="peer models and poolq's cache here")
    args = ap.parse_args()
    os.environ["POOLQ_BACKEND"] = "openvino"
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        os.environ.setdefault("POOLQ_CACHE_DIR", str(work / "poolq-cache"))
        ir = work / "peers" / "minilm-int8-ov.xml"
        if not ir.is_file():
            from benchmarks.peer_models import export_onnx, quantize_openvino

            ir.parent.mkdir(parents=True, exist_ok=True)
            onnx = export_onnx(minilm_path(), work / "peers" / "minilm-fp32.onnx", False)
            quantize_openvino(onnx, ir, minilm_path(), 256)
        return asyncio.run(run(args, ir))


if __name__ == "__main__":
    sys.exit(main())
