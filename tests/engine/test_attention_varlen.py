"""The CUDA varlen dispatch's arguments, checked on the CPU without the CUDA kernel: the window
tuples, ``cu_seqlens``, GQA, and the whole call against each CPU attention path, with a CPU
kernel that follows ``varlen_attn``'s documented semantics (per sequence from ``cu_seq_q``;
query ``i`` sees key ``j`` iff ``i - left <= j <= i + right``, -1 unbounded)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from poolq.worker.engine.models.attention_varlen import (
    FULL,
    causal_window,
    local_window,
    use_varlen,
    varlen_args,
    varlen_attention,
)
from poolq.worker.engine.models.causal_attention import causal_attention, plan_causal
from poolq.worker.engine.models.packed_attention import packed_attention, plan_attention
from poolq.worker.engine.models.packed_modernbert import _attend

LENS = [5, 17, 1, 40, 17]


def cpu_varlen(q, k, v, cu_q, cu_k, max_q, max_k, *, window_size=(-1, -1), enable_gqa=False):
    assert cu_q.dtype == torch.int32 and torch.equal(cu_q, cu_k) and max_q == max_k
    assert max_q == int((cu_q[1:] - cu_q[:-1]).max())
    assert enable_gqa == (k.shape[1] != q.shape[1])
    left, right = window_size
    out = torch.empty_like(q)
    for s, e in zip(cu_q[:-1].tolist(), cu_q[1:].tolist(), strict=True):
        pos = torch.arange(e - s)
        diff = pos[:, None] - pos[None, :]  # i - j
        allowed = torch.ones(e - s, e - s, dtype=torch.bool)
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
        kk, vv = k[s:e], v[s:e]
        if enable_gqa:
            rep = q.shape[1] // k.shape[1]
            kk, vv = kk.repeat_interleave(rep, 1), vv.repeat_interleave(rep, 1)
        o = F.scaled_dot_product_attention(
            q[s:e].transpose(0, 1), kk.transpose(0, 1), vv.transpose(0, 1), attn_mask=allowed
        )
        out[s:e] = o.transpose(0, 1)
    return out


def qkv(heads=4, kv_heads=4, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = sum(LENS)
    return (
        torch.randn(t, heads, d, generator=g),
        torch.randn(t, kv_heads, d, generator=g),
        torch.randn(t, kv_heads, d, generator=g),
    )


def test_windows_and_cu_seqlens():
    assert FULL == (-1, -1)
    assert causal_window(None) == (-1, 0) and causal_window(4096) == (4095, 0)
    assert local_window(64) == (64, 64)
    args = varlen_args(LENS, torch.device("cpu"))
    assert args.cu_seqlens_dev.dtype == torch.int32
    assert args.cu_seqlens_dev.tolist() == [0, 5, 22, 23, 63, 80] and args.max_len == 40


def test_the_cpu_never_takes_the_varlen_path():
    assert not use_varlen(torch.zeros(2, dtype=torch.float16))
    assert not use_varlen(torch.zeros(2))


def test_bidirectional_matches_packed_sdpa():
    q, k, v = qkv()
    heads, d = q.shape[1], q.shape[2]
    flat = torch.cat([q, k, v], dim=1).reshape(sum(LENS), 3 * heads * d)
    want = packed_attention(flat, plan_attention(LENS, torch.device("cpu")), heads)
    got = varlen_attention(q, k, v, varlen_args(LENS, q.device), FULL, kernel=cpu_varlen)
    torch.testing.assert_close(got.reshape(sum(LENS), -1), want)


def test_causal_sliding_window_and_gqa_match_the_decoder_path():
    q, k, v = qkv(heads=8, kv_heads=2)
    plan = plan_causal(LENS, torch.device("cpu"))
    for window in (None, 6):
        want = causal_attention(q, k, v, plan, 0, window)
        got = varlen_attention(
            q, k, v, varlen_args(LENS, q.device), causal_window(window), kernel=cpu_varlen
        )
        torch.testing.assert_close(got.reshape(sum(LENS), -1), want)


def test_local_band_matches_modernbert():
    q, k, v = qkv()
    half = 4
    args = varlen_args(LENS, q.device)
    got = varlen_attention(q, k, v, args, local_window(half), kernel=cpu_varlen)
    s = 0
    for n in LENS:
        want = _attend(q[None, s : s + n], k[None, s : s + n], v[None, s : s + n], None, half)
        torch.testing.assert_close(got[s : s + n], want[0])
        s += n
