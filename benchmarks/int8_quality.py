"""The int8 quality gate's figures for MiniLM and SPLADE-tiny: on the built-in calibration
sample (what the gate sees at load) and on 2,000 standard-library passages (texts it never
saw), and, for SPLADE, what quantizing the 30522-wide MLM projection does to the sparse outputs
(quality and encode time) against keeping that projection in fp32.

    python benchmarks/int8_quality.py [--limit 2000] [--threads 2]

Exit status 1 when a figure on the passages misses the default floors.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from benchmarks.procs import cpu_pressure
from benchmarks.variants.onednn_linear import fuse_mlm_head
from poolq.ingest.sample_corpus import passages
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.cpu import int8
from poolq.worker.engine.cpu.calibration_texts import CALIBRATION_TEXTS
from poolq.worker.engine.cpu.int8_gate import encode_texts
from poolq.worker.engine.cpu.int8_quality import QualityMeter
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.pooling import SpladePooler
from tests.models import minilm_path, splade_path


async def encode(model, texts: list[str], tasks: list[str]):  # type: ignore[no-untyped-def]
    async with AsyncEngine(model) as engine:
        t0 = time.perf_counter()
        out = await engine.encode(texts, tasks)
        return [r.outputs for r in out], time.perf_counter() - t0


def int8_encoder_only(path: str):  # type: ignore[no-untyped-def]
    """SPLADE with an int8 encoder and the MLM head left fp32 (the gate quantizes both)."""
    model = load_model(ModelConfig(path, dtype="float32"))
    with int8.input_absmax(model.encoder) as absmax:
        encode_texts(model, CALIBRATION_TEXTS, ["sparse"])
    int8.quantize_linears(model.encoder, absmax)
    sparse = model.pooler.poolers_by_task["sparse"]
    assert isinstance(sparse, SpladePooler)
    fuse_mlm_head(sparse.mlm_head)  # the fp32 head on oneDNN, as this figure was first measured
    model.precision = "int8"
    return model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--limit", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    texts = passages(args.limit)
    misses = []
    print(f"{len(texts)} standard-library passages; CPU pressure {cpu_pressure()}\n")
    for name, path, tasks in (
        ("MiniLM", str(minilm_path()), ["embed", "token_embed"]),
        ("SPLADE-tiny", str(splade_path()), ["sparse"]),
    ):
        fp32 = load_model(ModelConfig(path, dtype="float32"))
        q = load_model(ModelConfig(path, dtype="int8"))
        assert q.int8_report is not None
        print(f"{name} gate, built-in sample: {q.int8_report.summary()}")
        ref, t_ref = asyncio.run(encode(fp32, texts, tasks))
        variants = [("int8", q)]
        if isinstance(q.pooler.poolers_by_task.get("sparse"), SpladePooler):
            variants.append(("int8 encoder, MLM head fp32", int8_encoder_only(path)))
        for label, model in variants:
            got, t = asyncio.run(encode(model, texts, tasks))
            meter = QualityMeter(q.config.int8_floors, q.description.vocab_size)
            for r, g in zip(ref, got, strict=True):
                meter.add(r, g)
            report = meter.report()
            print(f"{name} {label}, passages: {report.summary()}")
            print(f"  encode {t:.2f} s vs fp32 {t_ref:.2f} s (x{t_ref / t:.2f}, engine, warm)")
            if label == "int8" and not report.passed:
                misses.append(name)
        print()
    if misses:
        print(f"MISS: {', '.join(misses)} below the floors on the passages", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
