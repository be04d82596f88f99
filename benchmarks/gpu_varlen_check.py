"""GPU check of the architectures people deploy: torch's ``varlen_attn`` against the SDPA paths,
and throughput against sentence-transformers, in fp16 on CUDA.

Checkpoints are built here with random weights in their sentence-transformers layout and a
WordPiece tokenizer made from the standard-library corpus (``gpu_check.write_tokenizer``):
``qwen3`` (hidden 384, 6 layers, GQA 6/2, last token), ``modernbert`` (384, 6 layers, window 128,
mean) and ``distilbert-splade`` (384, 6 layers, ``SparseEncoder`` layout, task ``sparse``).
For each, one poolq model in fp16 encodes the same texts (mixed 8-300 words) twice:

1. varlen: ``worker/engine/models/attention_varlen.py`` as shipped (``torch.nn.attention.varlen.varlen_attn``,
   counted: a run that never called it fails);
2. SDPA: that kernel hidden (``attention_varlen._torch_varlen_attn`` and
   ``packed_encoder._flash_varlen`` set to None): the length-bucketed / per-run SDPA paths.

Printed: max |difference| and min cosine of the outputs (sparse: of the vocabulary weights,
and the smallest Jaccard overlap of non-zero sets), poolq fp16 against sentence-transformers
fp16 (min cosine), and texts/s of poolq varlen, poolq SDPA and sentence-transformers fp16
(batch 64). Exit 1 if varlen and SDPA disagree (min cosine < ``VARLEN_COS_MIN``), poolq and
sentence-transformers disagree (< ``ST_COS_MIN``) or varlen_attn was never called.

    python benchmarks/gpu_varlen_check.py [--work DIR] [--texts 1000] [--dry-run]

``--dry-run``: builds the checkpoints, runs the whole script on 8 texts on the CPU in fp32 (no
varlen there: it checks the script, not the kernel) and exits before touching CUDA. Untested on
a GPU where it was written (no GPU was available).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from benchmarks.gpu_check import MIXES, texts_for, write_tokenizer

ARCHS = ("qwen3", "modernbert", "distilbert-splade")
VOCAB = 30522
VARLEN_COS_MIN = 0.999  # fp16 vs fp16, two attention kernels
ST_COS_MIN = 0.99  # poolq fp16 vs sentence-transformers fp16


def build(arch: str, folder: Path, tokenizer_src: Path) -> Path:
    from tests.decoder_checkpoints import build_decoder
    from tests.encoder_checkpoints import build_modernbert, build_splade_distilbert

    kw: dict[str, Any] = dict(hidden=384, layers=6, heads=6, tokenizer_src=tokenizer_src)
    if arch == "qwen3":
        return build_decoder(folder, "qwen3", kv_heads=2, **kw)
    if arch == "modernbert":
        return build_modernbert(folder, pooling="mean", **kw)
    return build_splade_distilbert(folder, **kw)


@contextlib.contextmanager
def attention_path(varlen: bool) -> Iterator[list[int]]:
    """``varlen``: torch's kernel, its calls counted in the yielded list; else SDPA only."""
    from poolq.worker.engine.models import attention_varlen, packed_encoder

    saved = attention_varlen._torch_varlen_attn, packed_encoder._flash_varlen
    calls = [0]
    kernel = saved[0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return kernel(*args, **kwargs)  # type: ignore[misc]

    if varlen and kernel is not None:
        attention_varlen._torch_varlen_attn = counted  # type: ignore[assignment]
    elif not varlen:
        attention_varlen._torch_varlen_attn = None  # type: ignore[assignment]
        packed_encoder._flash_varlen = None
    try:
        yield calls
    finally:
        attention_varlen._torch_varlen_attn, packed_encoder._flash_varlen = saved


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def poolq_encode(
    folder: Path, texts: list[str], task: str, device: str, dtype: str
) -> tuple[torch.Tensor, float]:
    """``[n, d]`` (embed) or ``[n, VOCAB]`` (sparse) fp32 on the host, and encode seconds."""
    from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
    from poolq.worker.engine.engine import AsyncEngine

    model = load_model(ModelConfig(str(folder), device=device, dtype=dtype))  # type: ignore[arg-type]

    async def go() -> tuple[list[Any], float]:
        async with AsyncEngine(model) as engine:
            await engine.encode(texts[:64], [task])  # warm-up
            sync(device)
            t0 = time.perf_counter()
            out = await engine.encode(texts, [task])
            sync(device)
            return out, time.perf_counter() - t0

    out, s = asyncio.run(go())
    if task == "sparse":
        rows = [r.sparse().to_dense(VOCAB) for r in out]
    else:
        rows = [r.tensor("embed") for r in out]
    return torch.stack(rows).float().cpu(), s


def st_encode(
    folder: Path, texts: list[str], task: str, device: str, dtype: torch.dtype
) -> tuple[torch.Tensor, float]:
    from sentence_transformers import SentenceTransformer, SparseEncoder

    cls = SparseEncoder if task == "sparse" else SentenceTransformer
    model = cls(str(folder), device=device, model_kwargs={"dtype": dtype})
    model.encode(texts[:64], batch_size=64)
    sync(device)
    t0 = time.perf_counter()
    emb = model.encode(texts, batch_size=64, convert_to_tensor=True)
    sync(device)
    s = time.perf_counter() - t0
    emb = emb.to_dense() if emb.is_sparse else emb
    return emb.float().cpu(), s


def compare(a: torch.Tensor, b: torch.Tensor, task: str) -> tuple[float, str]:
    """Min cosine and a line: max |a - b|, min cosine (sparse: min Jaccard of non-zero sets)."""
    cos = torch.nn.functional.cosine_similarity(a, b, dim=-1).min().item()
    line = f"max |diff| {(a - b).abs().max().item():.2e}, min cos {cos:.6f}"
    if task == "sparse":
        na, nb = a > 0, b > 0
        jac = (na & nb).sum(1) / (na | nb).sum(1).clamp(min=1)
        line += f", min Jaccard {jac.min().item():.3f}, {nb.sum(1).float().mean().item():.0f} terms/text"
    return cos, line


def check(arch: str, folder: Path, texts: list[str], device: str, dtype: str) -> list[str]:
    task = "sparse" if arch == "distilbert-splade" else "embed"
    with attention_path(varlen=True) as calls:
        ours, s_varlen = poolq_encode(folder, texts, task, device, dtype)
    with attention_path(varlen=False) as no_calls:
        sdpa, s_sdpa = poolq_encode(folder, texts, task, device, dtype)
    st, s_st = st_encode(folder, texts, task, device, getattr(torch, dtype))
    cos_v, line_v = compare(ours, sdpa, task)
    cos_st, line_st = compare(ours, st, task)
    n = len(texts)
    print(
        f"{arch:17s} {dtype}: varlen vs SDPA: {line_v}; varlen_attn calls {calls[0]} (SDPA run: {no_calls[0]})"
    )
    print(f"{arch:17s} {dtype}: poolq vs sentence-transformers {dtype}: {line_st}")
    print(
        f"{arch:17s} {dtype}: {n} texts: poolq varlen {n / s_varlen:7.0f} texts/s, poolq SDPA "
        f"{n / s_sdpa:7.0f}, sentence-transformers {n / s_st:7.0f} (x{s_st / s_varlen:.2f} vs ST, "
        f"x{s_sdpa / s_varlen:.2f} vs SDPA)"
    )
    failed = []
    if cos_v < VARLEN_COS_MIN:
        failed.append(f"{arch}: varlen vs SDPA min cos {cos_v:.6f} < {VARLEN_COS_MIN}")
    if cos_st < ST_COS_MIN:
        failed.append(f"{arch}: poolq vs sentence-transformers min cos {cos_st:.6f} < {ST_COS_MIN}")
    if device.startswith("cuda") and calls[0] == 0:
        failed.append(f"{arch}: varlen_attn was never called (torch {torch.__version__})")
    if no_calls[0]:
        failed.append(f"{arch}: the SDPA run called varlen_attn {no_calls[0]} times")
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--texts", type=int, default=1000)
    ap.add_argument("--arch", action="append", choices=ARCHS, help="repeat; default all")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    device, dtype, n = "cuda", "float16", args.texts
    if args.dry_run:
        device, dtype, n = "cpu", "float32", 8
    elif not torch.cuda.is_available():
        print("gpu_varlen_check: no CUDA device visible to torch", file=sys.stderr)
        return 2
    from poolq.worker.engine.models import attention_varlen

    print(
        f"torch {torch.__version__}: varlen_attn {'present' if attention_varlen._torch_varlen_attn else 'MISSING'}"
    )
    texts = texts_for(MIXES["mixed"], n)
    failed: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        write_tokenizer(work / "tokenizer")
        for arch in args.arch or ARCHS:
            folder = build(arch, work / arch, work / "tokenizer")
            failed += check(arch, folder, texts, device, dtype)
    for f in failed:
        print(f"FAIL: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
