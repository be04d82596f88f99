"""poolq's engine vs sentence-transformers, side by side in one process, same corpus, same threads.

Prints texts/s for each and the ratio poolq / sentence-transformers for: dense fp32, dense bf16,
sparse (SPLADE-tiny), and dense + token_embed (one MiniLM forward) + sparse against the three
sentence-transformers calls done separately. Also prints the useful GFLOP/s of the dense fp32
run next to this machine's measured fp32 GEMM rate. Exit status 1 if any ratio (or the
efficiency) misses its target.

    python benchmarks/bench_encode_vs_st.py [--limit N] [--threads N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from poolq.ingest.sample_corpus import passages
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from tests.models import minilm_path, splade_path

EFFICIENCY_TARGET = 0.80  # useful GFLOP/s of the dense fp32 run / this machine's fp32 GEMM rate


def timed(fn, repeats: int = 1) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def gemm_gflops(m: int = 2048, n: int = 2048, k: int = 2048) -> float:
    a, b = torch.randn(m, k), torch.randn(k, n)
    for _ in range(3):
        a @ b
    t = timed(lambda: a @ b, repeats=10)
    return 2 * m * n * k / t / 1e9


def minilm_flops(
    lengths: list[int], hidden: int = 384, inter: int = 1536, layers: int = 6
) -> float:
    """Useful FLOPs of the encoder: projections, FFN and attention (no padding)."""
    total = 0.0
    for n in lengths:
        total += layers * (8 * n * hidden * hidden + 4 * n * hidden * inter + 4 * n * n * hidden)
    return total


def poolq_runner(model, tasks, texts, **kw):
    async def go():
        async with AsyncEngine(model, **kw) as engine:
            return await engine.encode(texts, tasks)

    return lambda: asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--batch-size", type=int, default=32, help="sentence-transformers batch size")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from sentence_transformers import SentenceTransformer, SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling

    texts = passages(args.limit)
    minilm, splade = str(minilm_path()), str(splade_path())
    st_dense = SentenceTransformer(minilm, device="cpu")
    st_sparse = SparseEncoder(
        modules=[MLMTransformer(splade), SpladePooling(pooling_strategy="max")], device="cpu"
    )
    dense32 = load_model(ModelConfig(minilm))
    dense16 = load_model(ModelConfig(minilm, dtype="bfloat16"))
    sparse32 = load_model(ModelConfig(splade))
    lengths = [len(ids) for ids in (e.ids for e in dense32.tokenizer._tok.encode_batch(texts))]
    print(
        f"corpus: {len(texts)} passages, {sum(lengths)} MiniLM tokens (max 256), threads={args.threads}"
    )

    bs = args.batch_size
    st_encode = lambda: st_dense.encode(texts, batch_size=bs)  # noqa: E731
    st_tokens = lambda: st_dense.encode(texts, batch_size=bs, output_value="token_embeddings")  # noqa: E731
    st_splade = lambda: st_sparse.encode(texts, batch_size=bs)  # noqa: E731
    ours_dense32 = poolq_runner(dense32, ["embed"], texts)
    ours_dense16 = poolq_runner(dense16, ["embed"], texts)
    ours_sparse = poolq_runner(sparse32, ["sparse"], texts)

    def ours_all() -> None:
        async def go():
            async with AsyncEngine(dense32) as d, AsyncEngine(sparse32) as s:
                await asyncio.gather(
                    d.encode(texts, ["embed", "token_embed"]), s.encode(texts, ["sparse"])
                )

        asyncio.run(go())

    # warm up every path once on a small slice
    for fn in (
        lambda: st_dense.encode(texts[:64]),
        lambda: st_sparse.encode(texts[:64]),
        poolq_runner(dense32, ["embed"], texts[:64]),
        poolq_runner(dense16, ["embed"], texts[:64]),
        poolq_runner(sparse32, ["sparse"], texts[:64]),
    ):
        fn()

    rows = []
    t_st_dense = timed(st_encode)
    t_dense32 = timed(ours_dense32)
    rows.append(("dense fp32", t_st_dense, t_dense32, 1.3))
    t_dense16 = timed(ours_dense16)
    rows.append(("dense bf16 (vs ST fp32)", t_st_dense, t_dense16, 1.9))
    t_st_sparse = timed(st_splade)
    t_sparse = timed(ours_sparse)
    rows.append(("sparse SPLADE-tiny", t_st_sparse, t_sparse, 2.0))
    t_st_tokens = timed(st_tokens)
    t_all = timed(ours_all)
    rows.append(("dense+token_embed+sparse", t_st_dense + t_st_tokens + t_st_sparse, t_all, 1.8))

    n = len(texts)
    misses: list[str] = []
    print(
        f"\n{'workload':28s} {'ST texts/s':>11s} {'poolq texts/s':>14s} {'ratio':>7s} {'target':>7s}"
    )
    for name, t_ref, t_ours, target in rows:
        ratio = t_ref / t_ours
        mark = "ok" if ratio >= target else "MISS"
        if ratio < target:
            misses.append(f"{name}: {ratio:.2f}x < {target:.1f}x")
        print(
            f"{name:28s} {n / t_ref:11.1f} {n / t_ours:14.1f} {ratio:6.2f}x {target:5.1f}x {mark}"
        )

    peak = gemm_gflops()
    useful = minilm_flops(lengths) / t_dense32 / 1e9
    efficiency = useful / peak
    if efficiency < EFFICIENCY_TARGET:
        misses.append(
            f"dense fp32 efficiency {100 * efficiency:.0f}% < {100 * EFFICIENCY_TARGET:.0f}%"
        )
    print(
        f"\ndense fp32 useful rate: {useful:.1f} GFLOP/s; fp32 GEMM 2048^3: {peak:.1f} GFLOP/s; "
        f"efficiency {100 * efficiency:.0f}% (target >= {100 * EFFICIENCY_TARGET:.0f}%) "
        f"{'ok' if efficiency >= EFFICIENCY_TARGET else 'MISS'}"
    )
    if misses:
        print(f"MISS: {'; '.join(misses)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
