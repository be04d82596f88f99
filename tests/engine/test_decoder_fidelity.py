"""Decoder embedders (Qwen3, Mistral, Llama, Qwen2) on the packed decoder vs sentence-transformers,
on checkpoints built at test time (random weights, the real on-disk layout, fp32 CPU)."""

from __future__ import annotations

import numpy as np
import pytest

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.engine.models.packed_decoder import PackedDecoder
from poolq.worker.pooling import PoolingParams
from tests.decoder_checkpoints import MATRYOSHKA_DIMS, QUERY_PROMPT, build_decoder
from tests.describe import describe_model
from tests.texts import varied_texts

TEXTS = varied_texts(60)


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(1)


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory):
    return build_decoder(tmp_path_factory.mktemp("qwen3") / "m", "qwen3", hidden=96, layers=3)


def st_encode(folder, texts, **kw):
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(folder), device="cpu")
    return st.encode(texts, batch_size=16, convert_to_numpy=True, **kw)


async def poolq_encode(folder, texts, tasks=("embed",), **kw):
    async with AsyncEngine(load_model(ModelConfig(str(folder))), max_batch_tokens=1024) as engine:
        out = await engine.encode(texts, list(tasks), **kw)
    return np.stack([r.tensor("embed").numpy() for r in out])


def test_describe_qwen3_native_last_pooling(qwen3):
    d = describe_model(str(qwen3))
    assert (d.kind, d.pooling, d.native_encoder, d.normalize) == ("decoder", "LAST", True, True)
    assert d.matryoshka_dims == MATRYOSHKA_DIMS
    assert dict(d.prompts)["query"] == QUERY_PROMPT


def test_qwen3_loads_the_packed_decoder(qwen3):
    assert isinstance(load_model(ModelConfig(str(qwen3))).encoder, PackedDecoder)


@pytest.mark.parametrize("prompt", [None, "query"])
async def test_qwen3_matches_sentence_transformers(qwen3, prompt):
    ref = st_encode(qwen3, TEXTS, prompt_name=prompt)
    ours = await poolq_encode(qwen3, TEXTS, prompt_name=prompt)
    cos = cosine_rows(ours, ref)
    assert cos.min() >= 0.99999, f"min cosine {cos.min():.7f} at text {cos.argmin()}"
    assert np.abs(ours - ref).max() < 1e-4


async def test_query_prompt_changes_the_vector(qwen3):
    plain = await poolq_encode(qwen3, TEXTS[:8])
    query = await poolq_encode(qwen3, TEXTS[:8], prompt_name="query")
    assert cosine_rows(plain, query).max() < 0.999


async def test_qwen3_matryoshka_truncation(qwen3):
    dim = MATRYOSHKA_DIMS[-1]
    ref = st_encode(qwen3, TEXTS[:20], truncate_dim=dim)  # truncated, then normalised
    ours = await poolq_encode(qwen3, TEXTS[:20], [PoolingParams("embed", dimensions=dim)])
    assert ours.shape == (20, dim)
    ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    assert cosine_rows(ours, ref).min() >= 0.99999
    assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)


@pytest.mark.parametrize(
    ("model_type", "kw"),
    [
        ("mistral", dict(hidden=64, layers=2, heads=4, kv_heads=1)),
        ("llama", dict(hidden=128, layers=2, heads=4, kv_heads=2, rope_theta=500000.0)),
    ],
)
@pytest.mark.parametrize("prompt", [None, "query"])
async def test_other_decoders_match_sentence_transformers(tmp_path, model_type, kw, prompt):
    folder = build_decoder(tmp_path / model_type, model_type, seed=3, **kw)
    ref = st_encode(folder, TEXTS[:30], prompt_name=prompt)
    ours = await poolq_encode(folder, TEXTS[:30], prompt_name=prompt)
    cos = cosine_rows(ours, ref)
    assert cos.min() >= 0.99999, f"{model_type}: min cosine {cos.min():.7f} at {cos.argmin()}"


async def test_qwen2_matches_transformers(tmp_path):
    """transformers 5 swaps a qwen2 folder's tokenizer for its own Qwen2Tokenizer class, so the
    reference here is ``Qwen2Model`` itself on poolq's token ids: last row, normalised."""
    import torch
    from transformers import AutoModel

    folder = build_decoder(tmp_path / "qwen2", "qwen2", hidden=64, layers=2, heads=4, kv_heads=2)
    model = load_model(ModelConfig(str(folder)))
    assert isinstance(model.encoder, PackedDecoder)
    texts = TEXTS[:30]
    ids = [t.ids for t in model.tokenizer.encode_batch(texts)]
    hf = AutoModel.from_pretrained(str(folder)).eval()
    with torch.inference_mode():
        last = [hf(input_ids=torch.tensor([i])).last_hidden_state[0, -1] for i in ids]
    ref = torch.nn.functional.normalize(torch.stack(last), dim=-1).numpy()
    ours = await poolq_encode(folder, texts)
    cos = cosine_rows(ours, ref)
    assert cos.min() >= 0.99999, f"qwen2: min cosine {cos.min():.7f} at {cos.argmin()}"
