"""Encoder checkpoints built at run time: random weights in the sentence-transformers layout the
hub carries for the models people deploy, for the benchmarks (tests build smaller ones inline).

* :func:`build_splade_distilbert`: ``DistilBertForMaskedLM`` (the SPLADE-v3-DistilBERT layout):
  ``modules.json`` MLMTransformer -> SpladePooling(max, relu), ``config_sentence_transformers.json``
  ``model_type: SparseEncoder``, vocabulary-projection bias about -2 (SPLADE-like sparsity);
* :func:`build_modernbert`: ``ModernBertModel`` (the modernbert-embed layout): Transformer ->
  Pooling (mean or CLS) -> Normalize, local window 128 with a global layer every 3.

The tokenizer files are copied from ``tokenizer_src`` (MiniLM's WordPiece by default: both
sides of a comparison use the folder's tokenizer)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)


def _module(idx: int, path: str, type_: str) -> dict[str, object]:
    return {"idx": idx, "name": str(idx), "path": path, "type": type_}


def _copy_tokenizer(folder: Path, tokenizer_src: Path | None) -> None:
    if tokenizer_src is None:
        from tests.models import minilm_path

        tokenizer_src = minilm_path()
    for name in TOKENIZER_FILES:
        if (tokenizer_src / name).is_file():
            shutil.copy(tokenizer_src / name, folder / name)


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))


def _perturb_norms(model: torch.nn.Module) -> None:
    """Non-trivial LayerNorm weights and biases (they start at 1 and 0)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name.lower():
                continue
            if name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.1 * torch.randn_like(p))


def build_splade_distilbert(
    folder: Path,
    *,
    hidden: int = 384,
    layers: int = 6,
    heads: int = 6,
    seed: int = 5,
    mlm_bias: float = -2.0,
    tokenizer_src: Path | None = None,
) -> Path:
    from transformers import DistilBertConfig, DistilBertForMaskedLM

    config = DistilBertConfig(
        vocab_size=30522, dim=hidden, n_layers=layers, n_heads=heads, hidden_dim=4 * hidden
    )
    torch.manual_seed(seed)
    model = DistilBertForMaskedLM(config).eval()
    _perturb_norms(model)
    with torch.no_grad():  # most logits below zero: a few dozen to a few hundred terms per text
        bias = model.vocab_projector.bias
        bias.copy_(mlm_bias + 0.5 * torch.randn_like(bias))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    _copy_tokenizer(folder, tokenizer_src)
    st = "sentence_transformers.sparse_encoder.models"
    _write_json(
        folder / "modules.json",
        [
            _module(0, "", f"{st}.MLMTransformer"),
            _module(1, "1_SpladePooling", f"{st}.SpladePooling"),
        ],
    )
    _write_json(
        folder / "1_SpladePooling" / "config.json",
        {
            "pooling_strategy": "max",
            "activation_function": "relu",
            "word_embedding_dimension": None,
        },
    )
    _write_json(
        folder / "sentence_bert_config.json", {"max_seq_length": 512, "do_lower_case": False}
    )
    _write_json(
        folder / "config_sentence_transformers.json",
        {
            "model_type": "SparseEncoder",
            "prompts": {"query": "", "document": ""},
            "default_prompt_name": None,
            "similarity_fn_name": "dot",
        },
    )
    return folder


def build_modernbert(
    folder: Path,
    *,
    hidden: int = 384,
    layers: int = 6,
    heads: int = 6,
    pooling: str = "mean",
    seed: int = 11,
    tokenizer_src: Path | None = None,
) -> Path:
    from transformers import ModernBertConfig, ModernBertModel

    if pooling not in ("mean", "cls"):
        raise ValueError(f"pooling: expected 'mean' or 'cls', got {pooling!r}")
    config = ModernBertConfig(
        vocab_size=30522,
        hidden_size=hidden,
        intermediate_size=hidden * 3 // 2,  # GeGLU: Wi projects to twice this
        num_hidden_layers=layers,
        num_attention_heads=heads,
        global_attn_every_n_layers=3,
        local_attention=128,
        max_position_embeddings=8192,
        pad_token_id=0,
        cls_token_id=101,
        sep_token_id=102,
        bos_token_id=101,
        eos_token_id=102,
        global_rope_theta=160000.0,
        local_rope_theta=10000.0,
    )
    torch.manual_seed(seed)
    model = ModernBertModel(config).eval()
    _perturb_norms(model)
    with torch.no_grad():  # sharper attention than the init's: the local window matters
        for name, p in model.named_parameters():
            if "Wqkv" in name:
                p.mul_(4)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    _copy_tokenizer(folder, tokenizer_src)
    tok_cfg_path = folder / "tokenizer_config.json"
    tok_cfg = json.loads(tok_cfg_path.read_text()) if tok_cfg_path.is_file() else {}
    tok_cfg["model_input_names"] = ["input_ids", "attention_mask"]  # ModernBERT: no token types
    tok_cfg["model_max_length"] = 8192
    _write_json(tok_cfg_path, tok_cfg)
    _write_json(
        folder / "modules.json",
        [
            _module(0, "", "sentence_transformers.models.Transformer"),
            _module(1, "1_Pooling", "sentence_transformers.models.Pooling"),
            _module(2, "2_Normalize", "sentence_transformers.models.Normalize"),
        ],
    )
    _write_json(
        folder / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": hidden,
            "pooling_mode_cls_token": pooling == "cls",
            "pooling_mode_mean_tokens": pooling == "mean",
        },
    )
    (folder / "2_Normalize").mkdir(exist_ok=True)
    _write_json(
        folder / "sentence_bert_config.json", {"max_seq_length": 8192, "do_lower_case": False}
    )
    _write_json(
        folder / "config_sentence_transformers.json",
        {"prompts": {"query": "", "document": ""}, "default_prompt_name": None},
    )
    return folder
