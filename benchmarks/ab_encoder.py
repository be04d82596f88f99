"""A/B of encoder variants in one process, batch by batch: each change measured on its own.

Variants (``--variants``, comma-separated; the first is the reference):

* ``base``: per-run SDPA attention, MKL ``addmm`` linears, separate GELU and residual adds;
* ``fused``: linears on oneDNN with prepacked weights, bias + GELU and residual adds fused;
* ``buckets``: length-bucketed padded attention (one SDPA call per bucket;
  ``benchmarks/variants/bucketed_attention.py``);
* ``buckets+fused``, ``int8``, ``int8+buckets``.

The corpus is cut into engine-sized batches; every round runs each batch through every variant
(order rotating), and a variant's time is the sum over batches of its fastest run, so a burst of
other users' load spoils single runs, not the figures. ``--task sparse`` runs SPLADE-tiny
through its pooler too (the MLM head's 30522-wide GEMM included).

    python benchmarks/ab_encoder.py [--variants base,fused,buckets] [--task dense|sparse]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from benchmarks.procs import cpu_pressure, wait_quiet
from benchmarks.profile_encoder import batches, gemm_gflops, useful_flops
from benchmarks.variants.bucketed_attention import use_buckets
from benchmarks.variants.onednn_linear import fuse_onednn
from poolq.ingest.sample_corpus import passages
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.cpu.int8_gate import encode_texts
from tests.models import minilm_path, splade_path


def build(variant: str, path: str):  # type: ignore[no-untyped-def]
    parts = set(variant.split("+"))
    model = load_model(ModelConfig(path, dtype="int8" if "int8" in parts else "float32"))
    if "fused" in parts:
        fuse_onednn(model)
    if "buckets" in parts:
        use_buckets(model.encoder)  # after fuse_onednn: it keeps the fused linears
    return model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--variants", default="base,fused,buckets,buckets+fused")
    ap.add_argument("--task", choices=["dense", "sparse"], default="dense")
    ap.add_argument("--limit", type=int, default=1080)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-wait", type=float, default=30)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    path = str(minilm_path() if args.task == "dense" else splade_path())
    names = args.variants.split(",")
    models = {v: build(v, path) for v in names}
    ref = models[names[0]]
    texts = passages(args.limit)
    ids = [t.ids for t in ref.tokenizer.encode_batch(texts)]
    lengths = [len(i) for i in ids]
    plan, pos = [], 0
    for sub in batches(lengths, 2048):
        flat = torch.tensor([t for i in ids[pos : pos + len(sub)] for t in i], dtype=torch.long)
        plan.append((flat, sub, texts[pos : pos + len(sub)]))
        pos += len(sub)

    def run(model, flat, sub, chunk) -> None:  # type: ignore[no-untyped-def]
        if args.task == "dense":
            model.encoder(flat, sub)
        else:
            encode_texts(model, chunk, ["sparse"], max_batch_tokens=1 << 30)

    best = {v: [float("inf")] * len(plan) for v in names}
    peak = 0.0
    with torch.inference_mode():
        for v in names:
            for flat, sub, chunk in plan[:3]:
                run(models[v], flat, sub, chunk)  # warm-up
        for r in range(args.rounds):
            for i, (flat, sub, chunk) in enumerate(plan):
                if i % 8 == 0:
                    wait_quiet(max_wait_s=args.max_wait)
                    peak = max(peak, gemm_gflops(repeats=2))
                order = names[r % len(names) :] + names[: r % len(names)]
                for v in order:
                    t0 = time.perf_counter()
                    run(models[v], flat, sub, chunk)
                    best[v][i] = min(best[v][i], time.perf_counter() - t0)
    spec = ref.encoder.spec
    flops = useful_flops(lengths, spec.hidden_size, spec.intermediate_size, spec.num_layers)
    print(
        f"{args.task}: {len(texts)} passages, {sum(lengths)} tokens, {len(plan)} batches, "
        f"threads={args.threads}, best of {args.rounds} interleaved rounds per batch, "
        f"CPU pressure now {cpu_pressure()}; fp32 GEMM 2048^3 {peak:.0f} GFLOP/s"
    )
    base = sum(best[names[0]])
    for v in names:
        total = sum(best[v])
        rate = flops / total / 1e9
        print(
            f"  {v:16s} {total:7.3f} s  x{base / total:5.2f} vs {names[0]}  "
            f"useful {rate:6.1f} GFLOP/s = {100 * rate / peak:4.1f}% of the GEMM rate"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
