"""int8 models against independent fp32 references (sentence-transformers, computed figures by
hand), within the documented bounds and not equal to them; the quality gate refusing a model
whose int8 error is pushed over the floor (weight scales perturbed), or whose floors are set
above what int8 reaches, with the figures and floors in its message."""

import numpy as np
import pytest
import torch

from poolq.worker.engine.checkpoints.description import Int8Floors
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.cpu import int8
from poolq.worker.engine.cpu.int8 import Int8Linear
from poolq.worker.engine.cpu.int8_gate import Int8QualityError
from poolq.worker.engine.engine import AsyncEngine
from tests.cpu import needs_vnni
from tests.texts import varied_texts

pytestmark = pytest.mark.slow
TEXTS = varied_texts(220)


async def encode(model, texts, tasks):
    async with AsyncEngine(model) as engine:
        return await engine.encode(texts, tasks)


@needs_vnni
async def test_int8_minilm_within_the_documented_bounds_of_sentence_transformers(minilm):
    from sentence_transformers import SentenceTransformer

    ref = SentenceTransformer(minilm, device="cpu").encode(TEXTS, batch_size=32)
    model = load_model(ModelConfig(minilm, dtype="int8"))
    assert model.precision == "int8" and model.dtype == torch.float32
    layer = model.encoder.layers[0]
    assert all(
        isinstance(getattr(layer, n), Int8Linear) for n in ("qkv", "attn_out", "ffn_in", "ffn_out")
    )
    assert isinstance(layer.attn_norm, torch.nn.LayerNorm)  # LayerNorm, attention stay fp32
    out = await encode(model, TEXTS, ["embed"])
    ours = np.stack([r["embed"].numpy() for r in out])
    cos = (ours * ref).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() >= 0.97 and cos.mean() >= 0.99, (cos.min(), cos.mean())
    assert np.abs(ours - ref).max() > 1e-3  # int8 really ran: not the fp32 result
    report = model.int8_report
    assert report is not None and report.passed and report.texts == 42
    assert {(c.task, c.figure) for c in report.checks} == {
        ("embed", "min_cosine"),
        ("embed", "mean_cosine"),
        ("token_embed", "min_cosine"),
        ("token_embed", "mean_cosine"),
    }


@needs_vnni
async def test_int8_splade_terms_and_weights_stay_close_to_sentence_transformers(splade):
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling

    texts = TEXTS[:120]
    st = SparseEncoder(
        modules=[MLMTransformer(splade), SpladePooling(pooling_strategy="max")], device="cpu"
    )
    ref = st.encode(texts, batch_size=16, convert_to_tensor=True)
    ref = (ref.to_dense() if ref.is_sparse else ref).float().numpy()  # [n, V]
    model = load_model(ModelConfig(splade, dtype="int8"))
    head = model.pooler.poolers_by_task["sparse"].mlm_head
    assert isinstance(head.decoder, Int8Linear)  # the 30522-wide projection is int8 too
    out = await encode(model, texts, ["sparse"])
    overlaps, errors = [], []
    for want, r in zip(ref, out, strict=True):
        got = r["sparse"].to_dense(want.shape[0]).numpy()
        k = min(32, int((want > 0).sum()))
        top_w, top_g = set(np.argsort(-want)[:k]), set(np.argsort(-got)[:k])
        overlaps.append(len(top_w & top_g) / k)
        errors.append(np.linalg.norm(got - want) / np.linalg.norm(want))
    assert min(overlaps) >= 0.75 and np.mean(overlaps) >= 0.9, (min(overlaps), np.mean(overlaps))
    assert np.mean(errors) <= 0.08 and max(errors) <= 0.15, (np.mean(errors), max(errors))
    assert max(errors) > 1e-3  # int8, not fp32


@needs_vnni
async def test_int8_colbert_token_vectors_in_the_document_form(colbert):
    fp32 = load_model(ModelConfig(colbert))
    q = load_model(ModelConfig(colbert, dtype="int8"))
    assert [c.task for c in q.int8_report.checks] == ["token_embed", "token_embed"]
    texts = TEXTS[:40]
    ref, got = await encode(fp32, texts, ["token_embed"]), await encode(q, texts, ["token_embed"])
    rows = torch.cat(
        [
            torch.nn.functional.cosine_similarity(a["token_embed"], b["token_embed"], dim=-1)
            for a, b in zip(ref, got, strict=True)
        ]
    )
    assert rows.mean() >= 0.99 and rows.min() >= 0.9, (rows.min(), rows.mean())


def test_the_gate_refuses_a_model_whose_int8_error_is_pushed_over_the_floor(minilm, monkeypatch):
    honest = int8.weight_scales
    # scales 4x too small: every weight beyond a quarter of its row's range is clipped
    monkeypatch.setattr(int8, "weight_scales", lambda w: honest(w) / 4)
    with pytest.raises(Int8QualityError) as err:
        load_model(ModelConfig(minilm, dtype="int8"))
    msg = str(err.value)
    assert "dtype 'int8' refused by the quality gate" in msg
    assert "embed mean_cosine 0." in msg and "(VIOLATES 0.99)" in msg
    assert "on 42 texts" in msg and "float32" in msg


def test_the_gate_holds_int8_to_the_configured_floors(minilm):
    floors = Int8Floors(mean_cosine=0.99999)
    with pytest.raises(Int8QualityError, match=r"embed mean_cosine 0\.99\d+ \(VIOLATES 0\.99999\)"):
        load_model(ModelConfig(minilm, dtype="int8", int8_floors=floors))
    lenient = Int8Floors(
        min_cosine=0.5, mean_cosine=0.5, token_min_cosine=0.5, token_mean_cosine=0.5
    )
    assert load_model(ModelConfig(minilm, dtype="int8", int8_floors=lenient)).int8_report.passed


async def test_the_gates_batches_are_the_engines_and_keep_the_texts_order(minilm):
    """``encode_texts`` (the gate's passes) cuts batches with the engine's scheduler: several
    batches of a small budget give each text the output the engine gives it, in input order."""
    from poolq.worker.engine.cpu.int8_gate import encode_texts

    model = load_model(ModelConfig(minilm))
    texts = TEXTS[:40]
    got = encode_texts(model, texts, ["embed"], max_batch_tokens=300)
    want = await encode(model, texts, ["embed"])
    assert len(got) == len(texts)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g["embed"], w.tensor("embed"), atol=1e-5, rtol=1e-4)
