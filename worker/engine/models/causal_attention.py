"""Causal attention over a packed batch: ``q [T, heads, d]``, ``k, v [T, kv_heads, d]`` of many
sequences laid end to end -> ``[T, heads * d]``. Token ``i`` of a sequence attends to tokens
``<= i`` of its own sequence (within ``window`` when set), including the rows that earlier chunks
of the sequence left in its :class:`KVCache` (chunked prefill).

CPU / SDPA: sequences without a cache are bucketed by length (``packed_attention.bucket_lengths``)
and padded on the right: a causal query never sees the padding after it, so a bucket needs no key
mask, only ``is_causal`` (or the window mask). GQA: SDPA's ``enable_gqa`` (no K/V copies).
A sequence with cached rows runs alone: queries at positions ``past .. past + L - 1`` over
``past + L`` keys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate

import torch
import torch.nn.functional as F
from torch import Tensor

from poolq.worker.engine.models.attention_varlen import (
    causal_window,
    use_varlen,
    varlen_args,
    varlen_attention,
)
from poolq.worker.engine.models.packed_attention import bucket_lengths

# (bucket index, q [n, L, h, d], k, v [n, L, kv, d]) -> [n, L, h, d]
BucketAttention = Callable[[int, Tensor, Tensor, Tensor], Tensor]


@dataclass(eq=False)
class KVCache:
    """One sequence's keys and values from its earlier chunks: per layer ``[P, kv_heads, d]``.
    Freed (dropped) when the sequence finishes."""

    keys: list[Tensor] = field(default_factory=list)
    values: list[Tensor] = field(default_factory=list)

    @property
    def num_tokens(self) -> int:
        return int(self.keys[0].shape[0]) if self.keys else 0

    def extend(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append this chunk's rows for ``layer``; returns the whole sequence's keys and values."""
        if layer == len(self.keys):
            self.keys.append(k.clone())
            self.values.append(v.clone())
        else:
            self.keys[layer] = torch.cat([self.keys[layer], k])
            self.values[layer] = torch.cat([self.values[layer], v])
        return self.keys[layer], self.values[layer]


@dataclass(frozen=True)
class CausalPlan:
    """Host-side layout of a packed batch, built once per forward."""

    starts: tuple[int, ...]
    seq_lens: tuple[int, ...]
    caches: tuple[KVCache | None, ...]  # per sequence; a cache is read and extended
    buckets: tuple[tuple[int, ...], ...]  # sequences without a cache, grouped by length
    gathers_dev: tuple[Tensor | None, ...]  # per bucket: [n * L] source rows (None: n == 1)
    rows_dev: tuple[Tensor | None, ...]  # per bucket: packed rows of the real slots
    slots_dev: tuple[Tensor | None, ...]  # per bucket: padded slots holding real tokens


def plan_causal(
    seq_lens: list[int], device: torch.device, caches: list[KVCache | None] | None = None
) -> CausalPlan:
    starts = [0, *accumulate(seq_lens)][:-1]
    cache_of = list(caches) if caches is not None else [None] * len(seq_lens)
    free = [n if cache_of[i] is None else 0 for i, n in enumerate(seq_lens)]
    buckets = [tuple(b) for b in bucket_lengths(free)]
    gathers: list[Tensor | None] = []
    rows: list[Tensor | None] = []
    slots: list[Tensor | None] = []
    for members in buckets:
        if len(members) == 1:
            gathers.append(None)
            rows.append(None)
            slots.append(None)
            continue
        length = seq_lens[members[0]]
        pos = torch.arange(length)  # [L]
        lens_cpu = torch.tensor([seq_lens[i] for i in members])  # [n]
        starts_cpu = torch.tensor([starts[i] for i in members])  # [n]
        valid = (pos < lens_cpu[:, None]).reshape(-1)  # [n * L]
        gather = (starts_cpu[:, None] + torch.minimum(pos, lens_cpu[:, None] - 1)).reshape(-1)
        gathers.append(gather.to(device))
        rows.append(gather[valid].to(device))
        slots.append(torch.nonzero(valid).squeeze(1).to(device))
    return CausalPlan(
        tuple(starts),
        tuple(seq_lens),
        tuple(cache_of),
        tuple(buckets),
        tuple(gathers),
        tuple(rows),
        tuple(slots),
    )


def _window_mask(q_pos: Tensor, k_pos: Tensor, window: int | None) -> Tensor:
    """bool ``[Lq, Lk]``: True where query position may see key position."""
    allowed = k_pos[None, :] <= q_pos[:, None]
    if window is not None:
        allowed &= k_pos[None, :] > q_pos[:, None] - window
    return allowed


def _sdpa(q: Tensor, k: Tensor, v: Tensor, past: int, window: int | None) -> Tensor:
    """``q [n, Lq, h, d]``, ``k, v [n, Lk, kv, d]`` -> ``[n, Lq, h, d]``; queries sit at
    positions ``past ..`` of keys ``0 .. Lk - 1``."""
    lq, lk = q.shape[1], k.shape[1]
    mask = None
    causal = past == 0 and window is None
    if not causal:
        q_pos = torch.arange(past, past + lq, device=q.device)
        mask = _window_mask(q_pos, torch.arange(lk, device=q.device), window)
    o = F.scaled_dot_product_attention(
        q.transpose(1, 2),
        k.transpose(1, 2),
        v.transpose(1, 2),
        attn_mask=mask,
        is_causal=causal,
        enable_gqa=q.shape[2] != k.shape[2],
    )  # [n, h, Lq, d]
    return o.transpose(1, 2)


def attend_buckets(
    q: Tensor, k: Tensor, v: Tensor, plan: CausalPlan, out: Tensor, attend: BucketAttention
) -> Tensor:
    """Each bucket of ``plan`` through ``attend(bucket, q [n, L, h, d], k, v) -> [n, L, h, d]``,
    its real rows written into ``out [T, h * d]``."""
    heads, d = q.shape[1], q.shape[2]
    for b, (members, gather, rows, slots) in enumerate(
        zip(plan.buckets, plan.gathers_dev, plan.rows_dev, plan.slots_dev, strict=True)
    ):
        if gather is None:  # one sequence: views, no copies in
            s, n = plan.starts[members[0]], plan.seq_lens[members[0]]
            o = attend(b, q[None, s : s + n], k[None, s : s + n], v[None, s : s + n])
            out[s : s + n] = o[0].reshape(n, heads * d)
            continue
        assert rows is not None and slots is not None
        nb, length = len(members), plan.seq_lens[members[0]]
        qb, kb, vb = (z.index_select(0, gather).view(nb, length, -1, d) for z in (q, k, v))
        o = attend(b, qb, kb, vb).reshape(nb * length, heads * d)
        out.index_copy_(0, rows, o.index_select(0, slots))
    return out


def causal_attention(
    q: Tensor, k: Tensor, v: Tensor, plan: CausalPlan, layer: int, window: int | None = None
) -> Tensor:
    t, heads, d = q.shape
    if use_varlen(q) and all(c is None for c in plan.caches):  # CUDA: one kernel call
        args = varlen_args(list(plan.seq_lens), q.device)
        return varlen_attention(q, k, v, args, causal_window(window)).reshape(t, heads * d)
    out = q.new_empty(t, heads * d)  # [T, h * d]
    for i, cache in enumerate(plan.caches):  # sequences continuing earlier chunks: alone
        if cache is None:
            continue
        s, n = plan.starts[i], plan.seq_lens[i]
        past = int(cache.keys[layer].shape[0]) if layer < len(cache.keys) else 0
        k_all, v_all = cache.extend(layer, k[s : s + n], v[s : s + n])  # [past + n, kv, d]
        o = _sdpa(q[None, s : s + n], k_all[None], v_all[None], past, window)
        out[s : s + n] = o[0].reshape(n, heads * d)
    return attend_buckets(q, k, v, plan, out, lambda _, qb, kb, vb: _sdpa(qb, kb, vb, 0, window))
