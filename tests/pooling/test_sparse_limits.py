"""Sparse outputs that stay sparse: ``max_terms`` (top_k) and ``min_weight`` per request, from the
profile to the pooler."""

from __future__ import annotations

import pytest
import torch

from poolq.worker.config.profile import Profile
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.pooling import PoolingParams
from poolq.worker.pooling.splade import sparsify


def test_sparsify_min_weight_per_row():
    w = torch.tensor([[0.0, 0.1, 0.5, 2.0], [0.3, 0.0, 0.05, 0.2]])
    a, b = sparsify(w, [None, None], [0.4, None])
    assert a.indices.tolist() == [2, 3] and b.indices.tolist() == [0, 2, 3]
    (c,) = sparsify(w[:1], [1], [0.05])
    assert c.indices.tolist() == [3] and c.values.tolist() == [2.0]


def test_min_weight_is_checked():
    with pytest.raises(ValueError, match="min_weight must be a number >= 0"):
        PoolingParams("sparse", min_weight=-1.0)
    with pytest.raises(ValueError, match="min_weight applies to task 'sparse' only"):
        PoolingParams("embed", min_weight=0.1)


def test_profile_max_terms_and_min_weight():
    p = Profile.from_dict(
        {"vectors": {"sparse": {"task": "sparse", "max_terms": 64, "min_weight": 0.05}}}
    )
    assert p.vectors[0].params() == PoolingParams("sparse", top_k=64, min_weight=0.05)
    with pytest.raises(ValueError, match="vector 'sparse': min_weight must be a number"):
        Profile.from_dict({"vectors": {"sparse": {"task": "sparse", "min_weight": "x"}}})
    with pytest.raises(ValueError, match="apply to task 'sparse' only"):
        Profile.from_dict({"vectors": {"dense": {"task": "embed", "max_terms": 3}}})


async def test_engine_applies_the_limits(splade):
    texts = ["sparse retrieval with learned term weights", "a second, longer text " * 10]
    async with AsyncEngine(load_model(ModelConfig(splade))) as engine:
        full = await engine.encode(texts, ["sparse"])
        cut = await engine.encode(texts, [PoolingParams("sparse", top_k=8, min_weight=0.3)])
    for f, c in zip(full, cut, strict=True):
        fs, cs = f.sparse(), c.sparse()
        want = {
            i: v for i, v in zip(fs.indices.tolist(), fs.values.tolist(), strict=True) if v >= 0.3
        }
        want = dict(sorted(want.items(), key=lambda kv: -kv[1])[:8])
        assert dict(zip(cs.indices.tolist(), cs.values.tolist(), strict=True)) == pytest.approx(
            want
        )
        assert 0 < len(cs) <= 8 < len(fs)
