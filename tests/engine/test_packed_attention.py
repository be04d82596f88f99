"""Attention over a packed batch, bucketed (padded, key-masked) and by runs, against the formula
``softmax(q k^T / sqrt(d) + mask) v`` written out per sequence in float64."""

import math
import random

import pytest
import torch

from poolq.worker.engine.packed_attention import bucket_lengths, packed_attention, plan_attention

HEADS, D = 4, 8


def reference(qkv: torch.Tensor, lens: list[int], key_mask: torch.Tensor | None) -> torch.Tensor:
    out, start = [], 0
    for n in lens:
        q, k, v = qkv[start : start + n].double().view(n, 3, HEADS, D).unbind(1)  # [n, h, d]
        scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(D)
        if key_mask is not None:
            scores = scores.masked_fill(~key_mask[start : start + n][None, None, :], -math.inf)
        out.append(torch.einsum("hqk,khd->qhd", scores.softmax(-1), v).reshape(n, HEADS * D))
        start += n
    return torch.cat(out)


@pytest.mark.parametrize("mode", ["buckets", "runs"])
@pytest.mark.parametrize("masked", [False, True])
def test_packed_attention_equals_the_formula_per_sequence(mode, masked):
    rng = random.Random(3)
    lens = [rng.choice([1, 2, 7, 31, 32, 32, 33, 64, 90]) for _ in range(40)]
    t = sum(lens)
    qkv = torch.randn(t, 3 * HEADS * D)
    key_mask = None
    if masked:  # ColBERT-like: some keys not attended to, never all of a sequence's
        key_mask = torch.rand(t) > 0.3
        start = 0
        for n in lens:
            key_mask[start] = True
            start += n
    plan = plan_attention(lens, torch.device("cpu"), key_mask, mode)
    got = packed_attention(qkv, plan, HEADS)
    torch.testing.assert_close(got.double(), reference(qkv, lens, key_mask), atol=2e-6, rtol=1e-5)
    if mode == "buckets":
        assert 1 < len(plan.buckets) < len(set(lens)) + 5  # a few buckets, not one per text


def test_buckets_keep_padding_under_the_waste_bound_and_cover_every_sequence():
    rng = random.Random(0)
    lens = [rng.randint(5, 256) for _ in range(60)] + [0]
    buckets = bucket_lengths(lens, waste=0.25)
    members = sorted(i for b in buckets for i in b)
    assert members == [i for i, n in enumerate(lens) if n > 0]
    for b in buckets:
        padded = len(b) * max(lens[i] for i in b)
        assert padded - sum(lens[i] for i in b) <= 0.25 * padded
        assert lens[b[0]] == max(lens[i] for i in b)  # longest first: it sets the padding
