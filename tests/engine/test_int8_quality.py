"""The gate's figures against hand computations (numpy, sets): cosines, top-k overlap and the
relative error of sparse weights, and the floors each one is held to."""

import math

import numpy as np
import pytest
import torch

from poolq.worker.engine.checkpoints.description import Int8Floors
from poolq.worker.engine.cpu.int8_quality import Check, QualityMeter
from poolq.worker.pooling import SparseEmbedding


def sparse(pairs: dict[int, float]) -> SparseEmbedding:
    idx = sorted(pairs)
    return SparseEmbedding(
        torch.tensor(idx, dtype=torch.int32), torch.tensor([pairs[i] for i in idx])
    )


def test_dense_and_token_cosines_are_min_and_mean_over_texts_and_rows():
    rng = np.random.default_rng(0)
    meter = QualityMeter(Int8Floors())
    dense_cos, token_cos = [], []
    for n_tokens in (3, 5):
        a, b = rng.normal(size=8), rng.normal(size=8)
        ta, tb = rng.normal(size=(n_tokens, 4)), rng.normal(size=(n_tokens, 4))
        meter.add(
            {"embed": torch.tensor(a), "token_embed": torch.tensor(ta)},
            {"embed": torch.tensor(b), "token_embed": torch.tensor(tb)},
        )
        dense_cos.append(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
        token_cos += list(
            (ta * tb).sum(1) / np.linalg.norm(ta, axis=1) / np.linalg.norm(tb, axis=1)
        )
    figures = {(c.task, c.figure): c.value for c in meter.report().checks}
    assert figures[("embed", "min_cosine")] == pytest.approx(min(dense_cos))
    assert figures[("embed", "mean_cosine")] == pytest.approx(np.mean(dense_cos))
    assert figures[("token_embed", "min_cosine")] == pytest.approx(min(token_cos))
    assert figures[("token_embed", "mean_cosine")] == pytest.approx(np.mean(token_cos))
    assert meter.report().texts == 2


def test_sparse_overlap_of_top_k_terms_and_relative_weight_error():
    meter = QualityMeter(Int8Floors(topk=3), vocab_size=10)
    ref = {1: 5.0, 2: 4.0, 3: 3.0, 7: 0.5}
    got = {1: 5.1, 2: 2.0, 3: 1.0, 7: 2.5, 8: 0.1}  # top 3 {1, 7, 2}: shares {1, 2} with {1, 2, 3}
    meter.add({"sparse": sparse(ref)}, {"sparse": sparse(got)})
    meter.add({"sparse": sparse({4: 1.0})}, {"sparse": sparse({4: 1.0})})  # k = 1 (one term)
    a = np.zeros(10)
    b = np.zeros(10)
    for i, v in ref.items():
        a[i] = v
    for i, v in got.items():
        b[i] = v
    err = np.linalg.norm(a - b) / np.linalg.norm(a)
    figures = {c.figure: c.value for c in meter.report().checks}
    assert figures["min_topk_overlap"] == pytest.approx(2 / 3)
    assert figures["mean_topk_overlap"] == pytest.approx((2 / 3 + 1) / 2)
    assert figures["max_weight_error"] == pytest.approx(err)
    assert figures["mean_weight_error"] == pytest.approx(err / 2)


def test_floors_decide_and_errors_are_ceilings():
    assert Check("embed", "mean_cosine", 0.995, 0.99).ok
    assert not Check("embed", "mean_cosine", 0.985, 0.99).ok
    assert Check("sparse", "max_weight_error", 0.1, 0.15, higher_is_better=False).ok
    assert not Check("sparse", "max_weight_error", 0.2, 0.15, higher_is_better=False).ok
    meter = QualityMeter(Int8Floors(mean_cosine=0.999))
    meter.add({"embed": torch.tensor([1.0, 0.0])}, {"embed": torch.tensor([1.0, 0.1])})
    report = meter.report()
    assert not report.passed
    assert [(c.task, c.figure) for c in report.failures()] == [("embed", "mean_cosine")]
    assert "mean_cosine 0.9950 (VIOLATES 0.999)" in report.summary()
    assert report.as_dict()["tasks"]["embed"]["mean_cosine"]["floor"] == 0.999
    assert math.isclose(
        report.as_dict()["tasks"]["embed"]["min_cosine"]["value"], 0.995037, abs_tol=1e-6
    )


def test_int8_floors_from_a_profile_table_reject_unknown_keys_and_non_numbers():
    assert Int8Floors.from_dict({"mean_cosine": 0.98}).mean_cosine == 0.98
    with pytest.raises(ValueError, match=r"unknown keys \['mean_cos'\]"):
        Int8Floors.from_dict({"mean_cos": 0.98})
    with pytest.raises(ValueError, match="expected numbers"):
        Int8Floors.from_dict({"mean_cosine": "high"})  # type: ignore[dict-item]
