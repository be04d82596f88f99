"""Attention over a packed batch, by runs and bucketed (padded, key-masked: the benchmark variant
``benchmarks/variants/bucketed_attention.py``), against the formula
``softmax(q k^T / sqrt(d) + mask) v`` written out per sequence in float64; the length buckets
that the causal decoder uses."""

import math
import random

import pytest
import torch

from benchmarks.variants.bucketed_attention import bucketed_attention, plan_buckets
from poolq.worker.engine.models.packed_attention import (
    bucket_lengths,
    packed_attention,
    plan_attention,
)

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
    cpu = torch.device("cpu")
    if mode == "buckets":
        buckets = plan_buckets(lens, cpu, key_mask)
        assert 1 < len(buckets) < len(set(lens)) + 5  # a few buckets, not one per text
        got = bucketed_attention(qkv, buckets, HEADS)
    else:
        got = packed_attention(qkv, plan_attention(lens, cpu, key_mask), HEADS)
    torch.testing.assert_close(got.double(), reference(qkv, lens, key_mask), atol=2e-6, rtol=1e-5)


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


def test_an_encoder_with_bucketed_attention_gives_the_rows_of_runs():
    from benchmarks.variants.bucketed_attention import use_buckets
    from tests.engine.test_packed_encoder import _encoder_for, _tiny_bert

    hf = _tiny_bert()
    runs, buckets = _encoder_for(hf), _encoder_for(hf)
    use_buckets(buckets)
    lens = [5, 9, 9, 0, 3, 17]
    ids = torch.randint(2, 100, (sum(lens),))
    key_mask = torch.rand(sum(lens)) > 0.3
    key_mask[[0, 5, 14, 23, 26]] = True  # every sequence attends to its first token
    with torch.inference_mode():
        torch.testing.assert_close(
            buckets(ids, lens, key_mask_cpu=key_mask),
            runs(ids, lens, key_mask_cpu=key_mask),
            atol=1e-5,
            rtol=1e-5,
        )
