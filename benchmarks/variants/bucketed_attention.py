"""A measured variant, not in poolq's hot path: the packed encoder's CPU / SDPA attention by
length buckets instead of by runs of equal-length sequences (``packed_attention.py``).

Sequences are sorted by length and cut into buckets whose padding stays under
``packed_attention.PAD_WASTE`` of the bucket's tokens (:func:`bucket_lengths`, which the causal
decoder uses too); each bucket is gathered into a padded ``[n, L_max, 3, heads, d]`` block (one
``index_select``), runs one SDPA call with a key mask ``[n, 1, 1, L_max]`` (padding and ColBERT's
un-attended keys False), and is written back to its rows (one ``index_copy_``). A 2k-token batch
of ~25 texts takes a handful of SDPA calls instead of 25, at the price of the copies and of
attention over padding. ``benchmarks/ab_encoder.py`` ("buckets") and ``profile_encoder.py``
(``--attention buckets``) apply it with :func:`use_buckets` to measure it again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from poolq.worker.engine.models.packed_attention import bucket_lengths


@dataclass(frozen=True)
class Bucket:
    """``n`` sequences padded to ``length``; device tensors built once per forward."""

    n: int
    length: int
    start: int  # packed row of the first token, when n == 1
    gather_dev: Tensor  # [n * length] long: source row of each padded slot (pads repeat a row)
    mask_dev: Tensor | None  # [n, 1, 1, length] bool, True: key attended; None: all are
    slots_dev: Tensor | None  # [rows] long: the padded slots holding real tokens; None: all
    rows_dev: Tensor  # [rows] long: the packed row of each real slot


def _to(t_cpu: Tensor, device: torch.device) -> Tensor:
    if device.type == "cuda":
        t_cpu = t_cpu.pin_memory()
    return t_cpu.to(device, non_blocking=True)


def plan_buckets(
    seq_lens: list[int], device: torch.device, key_mask_cpu: Tensor | None = None
) -> tuple[Bucket, ...]:
    """The buckets of one packed batch, index and mask tensors on ``device``."""
    starts = [0, *accumulate(seq_lens)][:-1]
    out = []
    for members in bucket_lengths(seq_lens):
        n, length = len(members), seq_lens[members[0]]
        pos = torch.arange(length)  # [L]
        lens_cpu = torch.tensor([seq_lens[i] for i in members])  # [n]
        starts_cpu = torch.tensor([starts[i] for i in members])  # [n]
        valid_cpu = pos < lens_cpu[:, None]  # [n, L]
        gather_cpu = starts_cpu[:, None] + torch.minimum(pos, lens_cpu[:, None] - 1)  # [n, L]
        attend_cpu = valid_cpu
        if key_mask_cpu is not None:
            attend_cpu = valid_cpu & key_mask_cpu[gather_cpu]
        padded = not bool(valid_cpu.all())
        flat_valid = valid_cpu.reshape(-1)
        out.append(
            Bucket(
                n,
                length,
                starts[members[0]],
                _to(gather_cpu.reshape(-1), device),
                _to(attend_cpu.view(n, 1, 1, length), device)
                if not bool(attend_cpu.all())
                else None,
                _to(torch.nonzero(flat_valid).squeeze(1), device) if padded else None,
                _to(gather_cpu.reshape(-1)[flat_valid], device),
            )
        )
    return tuple(out)


def _sdpa_bucket(qkv: Tensor, out: Tensor, b: Bucket) -> None:
    """One bucket: gather into a padded block, one SDPA call, write the real rows back."""
    heads, d = qkv.shape[2], qkv.shape[3]
    if b.n == 1 and b.mask_dev is None:  # nothing to pad or mask: no copy in
        q, k, v = qkv[b.start : b.start + b.length].view(1, b.length, 3, heads, d).unbind(2)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        out[b.start : b.start + b.length].view(1, b.length, heads, d).copy_(o.transpose(1, 2))
        return
    block = qkv.index_select(0, b.gather_dev).view(b.n, b.length, 3, heads, d)  # copy in
    q, k, v = block.unbind(2)  # each [n, L, heads, d]
    o = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=b.mask_dev
    )  # [n, heads, L, d]
    flat = o.transpose(1, 2).reshape(b.n * b.length, heads * d)  # [n * L, H]
    if b.slots_dev is not None:
        flat = flat.index_select(0, b.slots_dev)  # [rows, H]: drop the padding slots
    out.index_copy_(0, b.rows_dev, flat)  # copy out


def bucketed_attention(qkv: Tensor, buckets: tuple[Bucket, ...], heads: int) -> Tensor:
    """``qkv [T, 3H]`` (rows ``[query; key; value]``) -> ``[T, H]``, rows in packed order."""
    t = qkv.shape[0]
    d = qkv.shape[1] // (3 * heads)
    qkv = qkv.view(t, 3, heads, d)
    out = qkv.new_empty(t, heads * d)  # [T, H]
    for b in buckets:
        _sdpa_bucket(qkv, out, b)
    return out


def _plus(linear: Any, a: Tensor, residual: Tensor) -> Tensor:
    """``residual + linear(a)``; inside the GEMM call when ``linear`` can (the "fused" variant's
    ``OneDNNLinear.plus``)."""
    plus = getattr(linear, "plus", None)
    return plus(a, residual) if plus is not None else residual + linear(a)


class _Current:
    """The buckets of the forward in progress, shared by one encoder's layers."""

    buckets: tuple[Bucket, ...] = ()


def _layer_forward(
    layer: Any, x: Tensor, plan: object, cu_seqlens: Tensor | None, *, current: _Current
) -> Tensor:
    """``packed_encoder._Layer.forward`` with the attention by buckets."""
    if cu_seqlens is not None:  # the flash varlen path (CUDA, low precision): one call, no buckets
        return layer._runs_forward(x, plan, cu_seqlens)
    attn = bucketed_attention(layer.qkv(x), current.buckets, layer.num_heads)
    x = layer.attn_norm(_plus(layer.attn_out, attn, x))
    return layer.ffn_norm(_plus(layer.ffn_out, layer.act(layer.ffn_in(x)), x))


def use_buckets(encoder: nn.Module) -> None:
    """A ``PackedEncoder``'s attention by buckets from now on. Apply it after ``fuse_onednn``
    (which replaces the layers' ``forward``) to measure both together."""
    current = _Current()
    runs_forward = encoder.forward

    def forward(
        input_ids: Tensor,
        seq_lens: list[int],
        token_type_ids: Tensor | None = None,
        key_mask_cpu: Tensor | None = None,
    ) -> Any:
        current.buckets = plan_buckets(seq_lens, input_ids.device, key_mask_cpu)
        return runs_forward(input_ids, seq_lens, token_type_ids, key_mask_cpu)

    layers: Any = encoder.layers
    for layer in layers:
        layer._runs_forward = layer.forward
        layer.forward = functools.partial(_layer_forward, layer, current=current)
    encoder.forward = forward
