"""Device and precision: CUDA when present (bf16, else fp16); on the CPU bf16 only where the
CPU computes it natively (AVX512-BF16 or AMX), fp32 otherwise; int8 on request."""

from __future__ import annotations

import logging
import time

import torch

from poolq.worker.engine.checkpoints.description import PRECISIONS
from poolq.worker.engine.cpu.cpu_features import native_bf16
from poolq.worker.engine.process_options import process_options

log = logging.getLogger("poolq.engine")

_DTYPES = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "int8": torch.float32,  # int8 weights; activations enter and leave each layer in fp32
}


def resolve_device(name: str | None) -> torch.device:
    if name is None or name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} requested but CUDA is not available")
    return device


def resolve_precision(
    name: str | None, device: torch.device, flags: frozenset[str] | None = None
) -> str:
    """``None``/``"auto"`` -> the best precision ``device`` computes natively; explicit names
    are checked (``flags``: the CPU's feature flags, for tests; default: this CPU's). On a CPU,
    the process option ``auto_bf16`` off (setting ``auto_bf16 = false``) keeps ``auto`` at
    float32 even where bf16 is native (outputs the same on every machine, to fp32 tolerance; the
    test suite turns it off)."""
    if name is not None and name not in PRECISIONS:
        raise ValueError(f"dtype: expected one of {', '.join(PRECISIONS)}, got {name!r}")
    if name is None or name == "auto":
        if device.type == "cuda":
            return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        allowed = process_options().auto_bf16
        return "bfloat16" if allowed and native_bf16(flags) else "float32"
    if name == "int8" and device.type != "cpu":
        raise ValueError(
            f"dtype 'int8' runs on the CPU only, got device {device}; on CUDA use "
            "bfloat16, float16 or auto"
        )
    return name


def compute_dtype(precision: str) -> torch.dtype:
    """The torch dtype activations run in (autocast for bf16/fp16)."""
    return _DTYPES[precision]


def bf16_slowdown(hidden: int, intermediate: int, repeats: int = 5) -> float:
    """bf16 time / fp32 time (> 1: bf16 is slower) of one FFN-shaped GEMM
    ``[512, hidden] x [hidden, intermediate]`` under CPU autocast, best of ``repeats`` each,
    interleaved (a few tens of milliseconds)."""
    a = torch.randn(512, hidden)
    w = torch.randn(intermediate, hidden)

    def fp32() -> None:
        torch.nn.functional.linear(a, w)

    def bf16() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            torch.nn.functional.linear(a, w)

    best = {fp32: float("inf"), bf16: float("inf")}
    with torch.inference_mode():
        for fn in (fp32, bf16):
            fn()
        for _ in range(repeats):
            for fn in (fp32, bf16):
                t0 = time.perf_counter()
                fn()
                best[fn] = min(best[fn], time.perf_counter() - t0)
    return best[bf16] / best[fp32]


def warn_emulated_bf16(
    precision: str, device: torch.device, hidden: int, inter: int
) -> float | None:
    """An explicit bf16 on a CPU without native bf16 runs, but slower than fp32: say by how
    much (measured now) and what ``auto`` picks. Returns the factor, or None when not emulated."""
    if precision != "bfloat16" or device.type != "cpu" or native_bf16():
        return None
    factor = bf16_slowdown(hidden, inter)
    log.warning(
        "dtype 'bfloat16' on a CPU without native bf16 (no avx512_bf16 or amx_bf16 flag): "
        "bf16 matmuls are emulated through fp32 and ran %.1fx slower than fp32 here "
        "(a [512x%d]x[%dx%d] GEMM just measured); dtype 'auto' picks float32 on this CPU",
        factor,
        hidden,
        hidden,
        inter,
    )
    return factor
