"""The sparse density warning at load: a masked-LM head positive on most of the vocabulary is
named with its mean terms per text (checked against sentence-transformers' SparseEncoder on the
same sample) and the options that bound it; SPLADE-tiny loads without a warning."""

from __future__ import annotations

import logging

import pytest

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.checkpoints.sparse_density import DENSE_TERMS_WARN, SAMPLE_TEXTS
from poolq.worker.engine.cpu.calibration_texts import CALIBRATION_TEXTS
from tests.engine.test_distilbert import build_distilbert
from tests.models import splade_path

pytestmark = pytest.mark.slow


def reference_mean_terms(folder: str) -> float:
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling

    mlm = MLMTransformer(folder)
    ref = SparseEncoder(modules=[mlm, SpladePooling(pooling_strategy="max")], device="cpu")
    emb = ref.encode(list(CALIBRATION_TEXTS[:SAMPLE_TEXTS]), convert_to_tensor=True)
    return float((emb.to_dense() != 0).sum(dim=1).float().mean())


def test_a_head_positive_on_most_of_the_vocabulary_warns(tmp_path, caplog):
    folder = str(build_distilbert(tmp_path / "dense_splade", masked_lm=True, mlm_bias=3.0))
    with caplog.at_level(logging.WARNING, logger="poolq.models"):
        model = load_model(ModelConfig(folder))
    want = reference_mean_terms(folder)
    assert want > DENSE_TERMS_WARN
    assert model.sparse_terms_mean is not None
    assert abs(model.sparse_terms_mean - want) <= 0.01 * want, (model.sparse_terms_mean, want)
    warnings = [r.getMessage() for r in caplog.records if r.name == "poolq.models"]
    assert len(warnings) == 1, warnings
    msg = warnings[0]
    assert folder in msg and f"{model.sparse_terms_mean:.0f}" in msg
    assert "max_terms" in msg and "min_weight" in msg


def test_splade_tiny_loads_without_a_warning(caplog):
    folder = str(splade_path())
    with caplog.at_level(logging.WARNING, logger="poolq.models"):
        model = load_model(ModelConfig(folder))
    want = reference_mean_terms(folder)
    assert model.sparse_terms_mean is not None
    assert abs(model.sparse_terms_mean - want) <= 0.01 * want + 1, (model.sparse_terms_mean, want)
    assert model.sparse_terms_mean < DENSE_TERMS_WARN
    assert not [r for r in caplog.records if r.name == "poolq.models"]
