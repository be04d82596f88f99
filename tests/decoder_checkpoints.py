"""Decoder embedders built at test time: random weights in the sentence-transformers layout of
Qwen3-Embedding / E5-Mistral (``model.safetensors`` + ``config.json`` at the root, ``modules.json``
with Transformer -> Pooling(lasttoken) -> Normalize, prompts in
``config_sentence_transformers.json``). The tokenizer is MiniLM's (any tokenizer works: both sides
use the folder's)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

from tests.models import minilm_path

QUERY_PROMPT = (
    "Instruct: Given a web search query, retrieve relevant passages that answer it\nQuery: "
)
MATRYOSHKA_DIMS = (64, 32)


def _config(model_type: str, hidden: int, layers: int, heads: int, kv_heads: int):
    from transformers import AutoConfig

    kw = dict(
        vocab_size=30522,
        hidden_size=hidden,
        intermediate_size=hidden * 3,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=8192,
        rms_norm_eps=1e-6,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    if model_type == "qwen3":
        kw["head_dim"] = hidden // heads
    if model_type == "mistral":
        kw["sliding_window"] = None
    return AutoConfig.for_model(model_type, **kw)


def build_decoder(
    folder: Path,
    model_type: str = "qwen3",
    *,
    hidden: int = 96,
    layers: int = 3,
    heads: int = 6,
    kv_heads: int = 2,
    seed: int = 0,
    rope_theta: float | None = None,
    tokenizer_src: Path | None = None,
) -> Path:
    """``tokenizer_src``: the folder whose tokenizer files are copied (default: MiniLM's)."""
    from transformers import AutoModel

    config = _config(model_type, hidden, layers, heads, kv_heads)
    if rope_theta is not None:
        if getattr(config, "rope_parameters", None):
            config.rope_parameters["rope_theta"] = rope_theta
        else:
            config.rope_theta = rope_theta
    torch.manual_seed(seed)
    model = AutoModel.from_config(config).eval()
    with torch.no_grad():  # non-trivial norm weights (they start at 1)
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1 + 0.2 * torch.randn_like(p))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    src = tokenizer_src or minilm_path()
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (src / f).is_file():
            shutil.copy(src / f, folder / f)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
        {
            "idx": 2,
            "name": "2",
            "path": "2_Normalize",
            "type": "sentence_transformers.models.Normalize",
        },
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "2_Normalize").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": hidden, "pooling_mode_lasttoken": True})
    )
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 4096, "do_lower_case": False})
    )
    (folder / "config_sentence_transformers.json").write_text(
        json.dumps(
            {
                "prompts": {"query": QUERY_PROMPT, "document": ""},
                "default_prompt_name": None,
                "similarity_fn_name": "cosine",
            }
        )
    )
    cfg = json.loads((folder / "config.json").read_text())
    cfg["matryoshka_dimensions"] = list(MATRYOSHKA_DIMS)
    (folder / "config.json").write_text(json.dumps(cfg, indent=1))
    return folder
