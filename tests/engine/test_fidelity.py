"""Fidelity against independent references: sentence-transformers and HF transformers."""

import numpy as np
import pytest
import torch

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from tests.texts import varied_texts

TEXTS = varied_texts(220)


async def encode(model_cfg, texts, tasks, **kw):
    async with AsyncEngine(load_model(model_cfg), **kw) as engine:
        return await engine.encode(texts, tasks)


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(1)


@pytest.fixture(scope="module")
def st_dense(minilm):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(minilm, device="cpu").encode(
        TEXTS, batch_size=32, convert_to_numpy=True
    )


async def test_dense_fp32_matches_sentence_transformers(minilm, st_dense):
    out = await encode(ModelConfig(minilm), TEXTS, ["embed"], max_batch_tokens=4096)
    ours = np.stack([r["embed"].numpy() for r in out])
    cos = cosine_rows(ours, st_dense)
    assert cos.min() >= 0.99999, f"min cosine {cos.min():.7f} at text {cos.argmin()}"
    assert np.abs(ours - st_dense).max() < 1e-4
    assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)
    assert (
        any(r.truncated for r in out) and not out[0].truncated
    )  # the 600-word text was cut at 256


async def test_dense_bf16_matches_sentence_transformers(minilm, st_dense):
    out = await encode(ModelConfig(minilm, dtype="bfloat16"), TEXTS, ["embed"])
    ours = np.stack([r["embed"].numpy() for r in out])
    cos = cosine_rows(ours, st_dense)
    assert cos.min() >= 0.9999, f"min cosine {cos.min():.7f} at text {cos.argmin()}"


async def test_sparse_matches_sentence_transformers_sparse_encoder(splade):
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling

    texts = TEXTS[:120]
    mlm = MLMTransformer(splade)
    ref_model = SparseEncoder(modules=[mlm, SpladePooling(pooling_strategy="max")], device="cpu")
    ref = ref_model.encode(
        texts, batch_size=16, convert_to_sparse_tensor=False, convert_to_tensor=True
    )
    ref = ref.to_dense() if ref.is_sparse else ref
    out = await encode(ModelConfig(splade), texts, ["sparse"], max_batch_tokens=2048)
    for i, r in enumerate(out):
        sp = r["sparse"]
        want = ref[i]
        want_idx = torch.nonzero(want > 1e-4).squeeze(1)
        got_idx = sp.indices[sp.values > 1e-4].long()
        assert got_idx.tolist() == want_idx.tolist(), f"text {i}: indices differ"
        torch.testing.assert_close(sp.to_dense(want.shape[0]), want.float(), rtol=1e-4, atol=1e-5)


async def test_colbert_matches_hf_forward_plus_linear(colbert, minilm):
    """Documents in colbert-ir's form: [CLS] [unused1] text [SEP] up to doc_maxlen 220 (the
    "." of ". " + text overwritten by the marker), punctuation rows dropped."""
    import string

    from safetensors.torch import load_file
    from transformers import AutoModel, AutoTokenizer

    texts = TEXTS[:40]
    out = await encode(ModelConfig(colbert), texts, ["token_embed"])
    tok = AutoTokenizer.from_pretrained(minilm)
    hf = AutoModel.from_pretrained(minilm).eval()
    linear = load_file(f"{colbert}/model.safetensors")["linear.weight"]
    skip = {tok.encode(p, add_special_tokens=False)[0] for p in string.punctuation}
    for text, r in zip(texts, out, strict=True):
        enc = tok(". " + text, return_tensors="pt", truncation=True, max_length=220)
        enc["input_ids"][0, 1] = tok.convert_tokens_to_ids("[unused1]")
        with torch.inference_mode():
            h = hf(**enc).last_hidden_state[0]
        keep = torch.tensor([t not in skip for t in enc["input_ids"][0].tolist()])
        want = torch.nn.functional.normalize(h @ linear.T, dim=-1)[keep]
        got = r["token_embed"]
        assert got.shape == (int(keep.sum()), 128)
        torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)


async def test_minilm_token_embeddings_match_sentence_transformers(minilm):
    from sentence_transformers import SentenceTransformer

    texts = TEXTS[:30]
    st = SentenceTransformer(minilm, device="cpu")
    ref = st.encode(texts, output_value="token_embeddings", convert_to_numpy=False)
    out = await encode(ModelConfig(minilm, normalize=False), texts, [("token_embed")])
    for r, want in zip(out, ref, strict=True):
        torch.testing.assert_close(
            r["token_embed"],
            torch.nn.functional.normalize(want.float(), dim=-1),
            atol=2e-5,
            rtol=1e-4,
        )
