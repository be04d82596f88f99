"""DistilBERT on the packed encoder: SPLADE (``DistilBertForMaskedLM``) vs sentence-transformers'
``SparseEncoder``, and the dense encoder vs transformers, on checkpoints built at test time."""

from __future__ import annotations

import shutil

import pytest
import torch

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.engine.models.packed_encoder import PackedEncoder
from tests.describe import describe_model
from tests.models import minilm_path
from tests.texts import varied_texts

TEXTS = varied_texts(60)[:40]


def build_distilbert(folder, masked_lm: bool, seed: int = 5, mlm_bias: float = -2.0):
    """``mlm_bias``: the vocabulary projection's mean bias (-2: SPLADE-like sparsity)."""
    from transformers import DistilBertConfig, DistilBertForMaskedLM, DistilBertModel

    config = DistilBertConfig(dim=64, n_layers=2, n_heads=4, hidden_dim=128)
    torch.manual_seed(seed)
    model = (DistilBertForMaskedLM if masked_lm else DistilBertModel)(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name or "LayerNorm" in name:
                p.copy_(
                    1 + 0.2 * torch.randn_like(p)
                    if name.endswith("weight")
                    else 0.1 * torch.randn_like(p)
                )
        if masked_lm:  # SPLADE-like sparsity: most logits below zero
            model.vocab_projector.bias.copy_(
                mlm_bias + 0.5 * torch.randn_like(model.vocab_projector.bias)
            )
    model.save_pretrained(folder)
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(minilm_path() / f, folder / f)
    return folder


@pytest.fixture(scope="module")
def distil_splade(tmp_path_factory):
    return build_distilbert(tmp_path_factory.mktemp("distil") / "splade", masked_lm=True)


def test_distilbert_splade_is_native(distil_splade):
    d = describe_model(str(distil_splade))
    assert (d.kind, d.native_encoder, d.hidden_size) == ("masked_lm", True, 64)
    assert isinstance(load_model(ModelConfig(str(distil_splade))).encoder, PackedEncoder)


async def test_distilbert_splade_matches_sparse_encoder(distil_splade):
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer, SpladePooling

    mlm = MLMTransformer(str(distil_splade))
    ref_model = SparseEncoder(modules=[mlm, SpladePooling(pooling_strategy="max")], device="cpu")
    ref = ref_model.encode(TEXTS, batch_size=16, convert_to_tensor=True)
    ref = ref.to_dense() if ref.is_sparse else ref
    async with AsyncEngine(load_model(ModelConfig(str(distil_splade))), max_batch_tokens=1024) as e:
        out = await e.encode(TEXTS, ["sparse"])
    nonzero = 0
    for i, r in enumerate(out):
        sp, want = r.sparse(), ref[i].float()
        want_idx = torch.nonzero(want).squeeze(1)
        got_idx = sp.indices[sp.values != 0].long().sort().values
        assert got_idx.tolist() == want_idx.tolist(), f"text {i}: non-zero sets differ"
        assert (sp.to_dense(want.shape[0]) - want).abs().max() <= 1e-4, f"text {i}"
        nonzero += len(want_idx)
    assert 0 < nonzero < 0.5 * len(TEXTS) * ref.shape[1]  # sparse, not empty


async def test_distilbert_dense_matches_transformers(tmp_path):
    from transformers import AutoModel

    folder = build_distilbert(tmp_path / "dense", masked_lm=False, seed=8)
    model = load_model(ModelConfig(str(folder), pooling="MEAN"))
    ids = [t.ids for t in model.tokenizer.encode_batch(TEXTS)]
    hf = AutoModel.from_pretrained(str(folder)).eval()
    with torch.inference_mode():
        want = torch.stack(
            [hf(input_ids=torch.tensor([i])).last_hidden_state[0].mean(0) for i in ids]
        )
    async with AsyncEngine(model, max_batch_tokens=1024) as engine:
        out = await engine.encode(TEXTS, ["embed"])
    got = torch.stack([r.tensor("embed") for r in out])
    cos = torch.nn.functional.cosine_similarity(got, want, dim=-1)
    assert cos.min() >= 0.99999, f"min cosine {cos.min():.7f}"
