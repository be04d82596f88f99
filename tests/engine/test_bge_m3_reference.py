"""BGE-M3's layout (XLM-RoBERTa + ``colbert_linear.pt`` + ``sparse_linear.pt``, random weights)
vs FlagEmbedding 1.4.2's ``BGEM3FlagModel`` (``M3Embedder``): dense vectors, lexical weights and
ColBERT vectors.

FlagEmbedding's package ``__init__`` imports every model family (its rerankers need ``peft``,
which would pull a CUDA torch); the M3 module and everything it imports run unchanged, only the
three re-exporting ``__init__`` files above it are skipped (:func:`m3_embedder_class`)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
import sys
import types
from pathlib import Path

import pytest
import torch

from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.engine.models.packed_encoder import PackedEncoder
from tests.models import minilm_path
from tests.texts import varied_texts

pytestmark = pytest.mark.slow

TEXTS = ["Hello, world!", "hello hello world", *varied_texts(30)[:12]]
COLBERT_DIM = 64  # BGE-M3: colbert_linear is hidden -> hidden


def m3_embedder_class() -> type:
    spec = importlib.util.find_spec("FlagEmbedding")
    if spec is None or spec.origin is None:
        pytest.fail("FlagEmbedding is not installed: run `make install`")
    root = Path(spec.origin).parent
    for name in ("FlagEmbedding", "FlagEmbedding.inference", "FlagEmbedding.inference.embedder"):
        if name not in sys.modules:  # a bare package: its submodules import, its __init__ not
            pkg = types.ModuleType(name)
            pkg.__path__ = [str(root.joinpath(*name.split(".")[1:]))]
            sys.modules[name] = pkg
    m3 = importlib.import_module("FlagEmbedding.inference.embedder.encoder_only.m3")
    return m3.M3Embedder


def build_bge_m3(folder: Path, seed: int = 23) -> Path:
    from transformers import XLMRobertaConfig, XLMRobertaModel

    config = XLMRobertaConfig(
        vocab_size=30522,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=3,
        num_attention_heads=4,
        max_position_embeddings=514,
        pad_token_id=0,  # the tokenizer's pad id: positions start after it, as in XLM-R
        type_vocab_size=1,
    )
    torch.manual_seed(seed)
    model = XLMRobertaModel(config, add_pooling_layer=False).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name:
                p.copy_(1 + 0.2 * torch.randn_like(p) if name.endswith("weight") else 0.1 * p)
    model.save_pretrained(folder)
    src = minilm_path()
    for f in ("tokenizer.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(src / f, folder / f)
    tok_cfg = json.loads((src / "tokenizer_config.json").read_text())
    tok_cfg.update(bos_token="[CLS]", eos_token="[SEP]")  # XLM-R's <s> ... </s> roles
    (folder / "tokenizer_config.json").write_text(json.dumps(tok_cfg))
    g = torch.Generator().manual_seed(seed)
    torch.save(
        {"weight": torch.randn(1, 64, generator=g) / 8, "bias": torch.full((1,), 0.05)},
        folder / "sparse_linear.pt",
    )
    torch.save(
        {
            "weight": torch.randn(COLBERT_DIM, 64, generator=g) / 8,
            "bias": 0.1 * torch.randn(COLBERT_DIM, generator=g),
        },
        folder / "colbert_linear.pt",
    )
    return folder


@pytest.fixture(scope="module")
def bge_m3(tmp_path_factory) -> Path:
    return build_bge_m3(tmp_path_factory.mktemp("bge_m3") / "m3")


@pytest.fixture(scope="module")
def reference(bge_m3) -> dict:
    m3 = m3_embedder_class()(
        str(bge_m3), use_fp16=False, devices="cpu", normalize_embeddings=True, batch_size=4
    )
    return m3.encode(TEXTS, return_dense=True, return_sparse=True, return_colbert_vecs=True)


@pytest.fixture(scope="module")
def outputs(bge_m3) -> list:
    async def run() -> list:
        model = load_model(ModelConfig(str(bge_m3)))
        assert model.description.kind == "bge_m3" and isinstance(model.encoder, PackedEncoder)
        async with AsyncEngine(model, max_batch_tokens=512) as engine:
            return await engine.encode(TEXTS, ["embed", "sparse", "token_embed"])

    import asyncio

    return asyncio.run(run())


def test_dense_matches_flagembedding(outputs, reference):
    got = torch.stack([r.tensor("embed") for r in outputs])
    want = torch.as_tensor(reference["dense_vecs"], dtype=torch.float32)
    cos = torch.nn.functional.cosine_similarity(got, want, dim=-1)
    assert cos.min() >= 0.99999, f"min cosine {cos.min():.7f} at text {int(cos.argmin())}"


def test_lexical_weights_match_flagembedding(outputs, reference):
    for i, (r, want) in enumerate(zip(outputs, reference["lexical_weights"], strict=True)):
        sparse = r["sparse"]
        got = {int(k): float(v) for k, v in zip(sparse.indices, sparse.values, strict=True)}
        want_ids = {int(k): float(v) for k, v in want.items()}
        assert set(got) == set(want_ids), f"text {i}: ids {sorted(set(got) ^ set(want_ids))}"
        worst = max((abs(got[k] - want_ids[k]) for k in got), default=0.0)
        assert worst < 1e-4, f"text {i}: max weight diff {worst:.2e}"


def test_colbert_vectors_match_flagembedding(outputs, reference):
    for i, (r, want) in enumerate(zip(outputs, reference["colbert_vecs"], strict=True)):
        got = r["token_embed"]
        ref = torch.as_tensor(want, dtype=torch.float32)
        assert got.shape == ref.shape, f"text {i}: {tuple(got.shape)} vs {tuple(ref.shape)}"
        cos = torch.nn.functional.cosine_similarity(got, ref, dim=-1)
        assert cos.min() >= 0.9999, f"text {i}: min per-token cosine {cos.min():.6f}"
