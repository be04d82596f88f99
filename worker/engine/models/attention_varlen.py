"""CUDA attention over a packed batch in one kernel call: torch's
``torch.nn.attention.varlen.varlen_attn`` (torch >= 2.10; flash attention inside), ``flash_attn``'s
``flash_attn_varlen_func`` only where torch has no varlen_attn. Every attention kind maps onto it:

* bidirectional (BERT, DistilBERT, ModernBERT global layers): ``window (-1, -1)``;
* causal (decoders): ``(-1, 0)``; causal with a sliding window of ``W`` keys (``k > q - W``):
  ``(W - 1, 0)``;
* ModernBERT local layers (``|q - k| <= half_window``): ``(half_window, half_window)``;
* GQA: ``enable_gqa`` when keys have fewer heads than queries (no head expansion).

``cu_seqlens`` (int32 ``[B + 1]``) is built on the host and copied once. Used only on CUDA in
fp16/bf16 (or under CUDA autocast) and without key masks; the CPU keeps the length-bucketed SDPA
paths (``packed_attention.py``, ``causal_attention.py``). ``benchmarks/gpu_check.py`` checks it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import torch
from torch import Tensor

Window = tuple[int, int]  # (left, right) keys a query sees; -1: unbounded
FULL: Window = (-1, -1)


def _load_kernel() -> Callable[..., Any] | None:
    """torch's ``varlen_attn`` where CUDA is: importing it pulls in torch's compiler stack
    (``torch._dynamo``, sympy: ~2 s of start-up) that a CPU worker never needs."""
    if not torch.cuda.is_available():
        return None
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:  # torch < 2.10
        return None
    return varlen_attn


_torch_varlen_attn = _load_kernel()


def causal_window(window: int | None) -> Window:
    """A decoder's window: ``None`` causal; ``W``: the last ``W`` keys, itself included."""
    return (-1, 0) if window is None else (window - 1, 0)


def local_window(half_window: int) -> Window:
    """ModernBERT's local band ``|q - k| <= half_window``."""
    return (half_window, half_window)


@dataclass(frozen=True)
class VarlenArgs:
    cu_seqlens_dev: Tensor  # [B + 1] int32 prefix sums of the sequence lengths
    max_len: int


def varlen_args(seq_lens: list[int], device: torch.device) -> VarlenArgs:
    cu_cpu = torch.tensor([0, *accumulate(seq_lens)], dtype=torch.int32)
    return VarlenArgs(cu_cpu.to(device, non_blocking=True), max(seq_lens, default=0))


def use_varlen(x: Tensor) -> bool:
    """torch's varlen kernel serves this tensor: CUDA, fp16/bf16 or under CUDA autocast."""
    return (
        _torch_varlen_attn is not None
        and x.is_cuda
        and (x.dtype in (torch.float16, torch.bfloat16) or torch.is_autocast_enabled("cuda"))
    )


def varlen_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    args: VarlenArgs,
    window: Window = FULL,
    kernel: Callable[..., Tensor] | None = None,
) -> Tensor:
    """``q [T, h, d]``, ``k, v [T, kv, d]`` -> ``[T, h, d]``. ``kernel``: torch's
    ``varlen_attn`` by default (any function of its signature)."""
    fn = kernel or _torch_varlen_attn
    if fn is None:
        raise RuntimeError("torch.nn.attention.varlen.varlen_attn needs torch >= 2.10")
    if q.shape[1] % k.shape[1]:
        raise ValueError(f"query heads {q.shape[1]} must be a multiple of kv heads {k.shape[1]}")
    dtype = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else q.dtype
    out = fn(
        q.to(dtype),
        k.to(dtype),
        v.to(dtype),
        args.cu_seqlens_dev,
        args.cu_seqlens_dev,
        args.max_len,
        args.max_len,
        window_size=window,
        enable_gqa=k.shape[1] != q.shape[1],
    )
    assert isinstance(out, Tensor)
    return out


def flash_signature(
    flash_attn_varlen_func: Callable[..., Tensor] | None,
) -> Callable[..., Tensor] | None:
    """The packed encoder's varlen hook (``flash_attn_varlen_func``'s signature): torch's
    ``varlen_attn`` when present, else ``flash_attn``'s function (None: neither)."""
    if _torch_varlen_attn is None:
        return flash_attn_varlen_func

    def torch_varlen(
        q: Tensor,
        k: Tensor,
        v: Tensor,
        cu_q: Tensor,
        cu_k: Tensor,
        max_q: int,
        max_k: int,
        dropout_p: float = 0.0,
        causal: bool = False,
    ) -> Tensor:
        if dropout_p:
            raise ValueError("varlen_attn runs inference only: dropout_p must be 0")
        args = VarlenArgs(cu_q.to(torch.int32), max_q)
        assert cu_k is cu_q or (torch.equal(cu_k, cu_q) and max_k == max_q)
        return varlen_attention(q, k, v, args, (-1, 0) if causal else FULL)

    return torch_varlen
