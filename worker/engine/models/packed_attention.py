"""Attention over a packed batch: ``qkv [T, 3H]`` of many sequences laid end to end -> ``[T, H]``.

Two ways, planned once per forward on the host (:func:`plan_attention`):

* SDPA (CPU, and CUDA without a varlen kernel): one call per run of consecutive equal-length
  sequences, no copies in, one out.
* flash varlen: CUDA in fp16/bf16 with ``flash_attn`` installed, one call for the batch (flash
  varlen takes no key mask: runs with masked keys are redone with masked SDPA).

All index and mask tensors are built on the host and copied to the device once per forward,
not per layer. :func:`bucket_lengths` cuts sequences into length buckets for the causal
decoder (``models/causal_attention.py``); ``benchmarks/variants/bucketed_attention.py`` measures
the same bucketing for this encoder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

import torch
import torch.nn.functional as F
from torch import Tensor

PAD_WASTE = 0.25  # at most this share of a bucket's tokens is padding


@dataclass(frozen=True)
class AttnPlan:
    """Host-side description of the packed batch, computed once per forward."""

    # (row start, number of sequences, their common length) per run of equal-length sequences.
    groups: list[tuple[int, int, int]]
    cu_seqlens_cpu: Tensor  # [B + 1] int32, prefix sums of seq_lens
    max_seqlen: int
    # Per group: None, or bool [n, 1, 1, L] on the device (True: the key is attended to).
    key_masks: tuple[Tensor | None, ...] = ()


def _runs(seq_lens: list[int]) -> list[tuple[int, int, int]]:
    groups: list[tuple[int, int, int]] = []
    start = 0
    for length in seq_lens:
        if groups and groups[-1][2] == length:
            g_start, n, _ = groups[-1]
            groups[-1] = (g_start, n + 1, length)
        else:
            groups.append((start, 1, length))
        start += length
    return [g for g in groups if g[2] > 0]


def _group_key_masks(
    groups: list[tuple[int, int, int]], key_mask_cpu: Tensor, device: torch.device
) -> tuple[Tensor | None, ...]:
    """Runs whose keys are all attended get None. One host-to-device copy per masked run."""
    masks: list[Tensor | None] = []
    for start, n, length in groups:
        run_cpu = key_mask_cpu[start : start + n * length]  # [n * L]
        if bool(run_cpu.all()):
            masks.append(None)
            continue
        m_cpu = run_cpu.view(n, 1, 1, length)  # broadcast over heads and query rows
        masks.append(_to(m_cpu, device))
    return tuple(masks)


def _to(t_cpu: Tensor, device: torch.device) -> Tensor:
    if device.type == "cuda":
        t_cpu = t_cpu.pin_memory()
    return t_cpu.to(device, non_blocking=True)


def check_packed(input_ids: Tensor, seq_lens: list[int], key_mask_cpu: Tensor | None = None) -> int:
    """``T``, once ``input_ids`` is checked flat ``[sum(seq_lens)]`` and ``key_mask_cpu`` (if
    given) a host bool ``[T]``."""
    t = int(input_ids.shape[0])
    if input_ids.dim() != 1 or t != sum(seq_lens):
        raise ValueError(
            f"input_ids must be flat [sum(seq_lens)={sum(seq_lens)}], got {tuple(input_ids.shape)}"
        )
    if key_mask_cpu is not None and (
        key_mask_cpu.shape != (t,) or key_mask_cpu.dtype != torch.bool
    ):
        raise ValueError(
            f"key_mask_cpu must be a host bool [{t}], got {key_mask_cpu.dtype} "
            f"{tuple(key_mask_cpu.shape)}"
        )
    return t


def bucket_lengths(seq_lens: list[int], waste: float = PAD_WASTE) -> list[list[int]]:
    """Sequence indices per bucket: longest first, a bucket grows while its padding stays
    within ``waste`` of its padded tokens."""
    order = sorted((i for i, n in enumerate(seq_lens) if n > 0), key=lambda i: -seq_lens[i])
    buckets: list[list[int]] = []
    for i in order:
        if buckets:
            cur = buckets[-1]
            padded = (len(cur) + 1) * seq_lens[cur[0]]
            real = sum(seq_lens[j] for j in cur) + seq_lens[i]
            if padded - real <= waste * padded:
                cur.append(i)
                continue
        buckets.append([i])
    return buckets


def plan_attention(
    seq_lens: list[int],
    device: torch.device,
    key_mask_cpu: Tensor | None = None,
) -> AttnPlan:
    groups = _runs(seq_lens)
    cu = torch.tensor([0, *accumulate(seq_lens)], dtype=torch.int32)
    masks = _group_key_masks(groups, key_mask_cpu, device) if key_mask_cpu is not None else ()
    return AttnPlan(groups, cu, max(seq_lens, default=0), masks)


def _sdpa_run(
    qkv: Tensor, out: Tensor, start: int, n: int, length: int, mask: Tensor | None
) -> None:
    """One run of ``n`` sequences of ``length`` tokens into ``out`` rows. ``qkv``: [T, 3, h, d]."""
    end = start + n * length
    heads, d = qkv.shape[2], qkv.shape[3]
    # [n, L, 3, heads, d] -> three [n, heads, L, d] views (no copies)
    q, k, v = qkv[start:end].view(n, length, 3, heads, d).unbind(2)
    o = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask
    )  # [n, heads, L, d]
    out[start:end].view(n, length, heads, d).copy_(o.transpose(1, 2))


def packed_attention(
    qkv: Tensor,
    plan: AttnPlan,
    heads: int,
    cu_seqlens: Tensor | None = None,
    flash_varlen: Callable[..., Tensor] | None = None,
) -> Tensor:
    """``qkv [T, 3H]`` (rows ``[query; key; value]``) -> ``[T, H]``, rows in packed order."""
    t = qkv.shape[0]
    d = qkv.shape[1] // (3 * heads)
    qkv = qkv.view(t, 3, heads, d)
    masks = plan.key_masks or (None,) * len(plan.groups)
    if cu_seqlens is not None and flash_varlen is not None:
        q, k, v = qkv.unbind(1)  # each [T, heads, d]
        out = flash_varlen(
            q,
            k,
            v,
            cu_seqlens,  # cu_seqlens_q
            cu_seqlens,  # cu_seqlens_k
            plan.max_seqlen,  # max_seqlen_q
            plan.max_seqlen,  # max_seqlen_k
            dropout_p=0.0,
            causal=False,
        )  # [T, heads, d]
        out = out.reshape(t, -1)  # [T, H]
        for (start, n, length), mask in zip(plan.groups, masks, strict=True):
            if mask is not None:
                _sdpa_run(qkv, out, start, n, length, mask)
        return out
    out = qkv.new_empty(t, heads * d)  # [T, H]
    for (start, n, length), mask in zip(plan.groups, masks, strict=True):
        _sdpa_run(qkv, out, start, n, length, mask)
    return out
