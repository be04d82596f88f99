"""Rerankers and classifiers built at test time: random weights in the layouts the hub carries.

* :func:`build_cross_encoder`: a ``*ForSequenceClassification`` cross-encoder (BERT, XLM-R,
  ModernBERT, DistilBERT) with one label, saved by transformers, as
  ``cross-encoder/ms-marco-MiniLM-L-6-v2`` or ``BAAI/bge-reranker-v2-m3`` are;
* :func:`build_minilm_cross_encoder`: the MiniLM-L6 cross-encoder's real size (the bundled
  all-MiniLM-L6-v2 backbone, a random one-label head), for the benchmarks;
* :func:`build_qwen3_reranker`: a ``Qwen3ForCausalLM`` whose model card says
  ``pipeline_tag: text-ranking`` (the Qwen3-Reranker layout), tied embeddings;
* :func:`build_classifier`: a labeller with ``id2label`` (single- or multi-label), either random
  or on the bundled MiniLM backbone (``on_minilm``: the same backbone as the default profile's
  vectors, so it shares their forward pass).

Tokenizers are MiniLM's WordPiece. The RoBERTa-family ones get RoBERTa's pair form
(``<s> a </s></s> b </s>``, written with MiniLM's [CLS]/[SEP]) and no token type ids, as their
tokenizers have.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch

from tests.models import minilm_path

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)
QWEN3_CARD = """---
license: apache-2.0
library_name: transformers
pipeline_tag: text-ranking
---
# A Qwen3-Reranker-shaped model with random weights (a test fixture)
"""


def copy_tokenizer(folder: Path, *, roberta_pairs: bool = False, type_ids: bool = True) -> None:
    src = minilm_path()
    for name in TOKENIZER_FILES:
        shutil.copy(src / name, folder / name)
    if roberta_pairs:
        from tokenizers import Tokenizer, processors

        tok = Tokenizer.from_file(str(src / "tokenizer.json"))
        tok.post_processor = processors.RobertaProcessing(("[SEP]", 102), ("[CLS]", 101))
        tok.save(str(folder / "tokenizer.json"))
    if not type_ids:
        cfg = json.loads((folder / "tokenizer_config.json").read_text())
        cfg["model_input_names"] = ["input_ids", "attention_mask"]
        cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
        (folder / "tokenizer_config.json").write_text(json.dumps(cfg))


_HEADS = ("classifier", "pooler", "head.dense")


def _perturb(model: torch.nn.Module, seed: int) -> None:
    """Non-trivial norms, token-type rows and heads (they start at 1, 0 and near 0: every pair
    would score about 0.5)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower():
                base = 1.0 if name.endswith("weight") else 0.0
                p.copy_(base + 0.2 * torch.randn(p.shape, generator=g))
            elif "token_type_embeddings" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            elif any(h in name for h in _HEADS) and p.dim() == 2:
                p.copy_(2 * torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)


def _config(family: str, labels: int, hidden: int, layers: int, heads: int) -> Any:
    import transformers as tf

    # initializer_range 0.1 (not 0.02): attention that is not uniform, so pairs score apart
    common: dict[str, Any] = dict(
        vocab_size=30522, num_labels=labels, hidden_act="gelu", initializer_range=0.1
    )
    if family == "bert":
        return tf.BertConfig(hidden_size=hidden, num_hidden_layers=layers,
            num_attention_heads=heads, intermediate_size=2 * hidden, max_position_embeddings=512,
            **common)  # fmt: skip
    if family == "xlm-roberta":
        return tf.XLMRobertaConfig(hidden_size=hidden, num_hidden_layers=layers,
            num_attention_heads=heads, intermediate_size=2 * hidden, max_position_embeddings=514,
            pad_token_id=1, type_vocab_size=1, **common)  # fmt: skip
    if family == "distilbert":
        common.pop("hidden_act")
        return tf.DistilBertConfig(dim=hidden, n_layers=layers, n_heads=heads,
            hidden_dim=2 * hidden, **common)  # fmt: skip
    if family == "modernbert":
        common.pop("hidden_act")
        return tf.ModernBertConfig(hidden_size=hidden, num_hidden_layers=layers,
            num_attention_heads=heads, intermediate_size=hidden * 3 // 2, pad_token_id=0,
            cls_token_id=101, sep_token_id=102, bos_token_id=101, eos_token_id=102,
            global_attn_every_n_layers=2, local_attention=16, classifier_pooling="mean",
            **common)  # fmt: skip
    raise ValueError(
        f"family: expected bert, xlm-roberta, distilbert or modernbert, got {family!r}"
    )


def build_cross_encoder(
    folder: Path,
    family: str = "bert",
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    seed: int = 0,
    labels: int = 1,
    id2label: dict[int, str] | None = None,
    problem_type: str | None = None,
) -> Path:
    from transformers import AutoModelForSequenceClassification

    config = _config(family, labels, hidden, layers, heads)
    if id2label is not None:
        config.id2label = dict(id2label)
        config.label2id = {v: k for k, v in id2label.items()}
    if problem_type is not None:
        config.problem_type = problem_type
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_config(config).eval()
    _perturb(model, seed)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    roberta = family == "xlm-roberta"
    copy_tokenizer(folder, roberta_pairs=roberta, type_ids=family == "bert")
    return folder


def build_minilm_cross_encoder(folder: Path, *, seed: int = 7) -> Path:
    """``BertForSequenceClassification`` on the bundled MiniLM-L6 (its pooler included) and a
    random one-label classifier: ms-marco-MiniLM-L-6-v2's architecture and size."""
    from safetensors.torch import load_file, save_file

    src = minilm_path()
    state = {f"bert.{k}": v for k, v in load_file(str(src / "model.safetensors")).items()}
    state.pop("bert.embeddings.position_ids", None)
    g = torch.Generator().manual_seed(seed)
    state["classifier.weight"] = torch.randn(1, 384, generator=g) / 384**0.5
    state["classifier.bias"] = torch.zeros(1)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(state, str(folder / "model.safetensors"))
    config = json.loads((src / "config.json").read_text())
    config.update(architectures=["BertForSequenceClassification"], num_labels=1,
                  id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0})  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    copy_tokenizer(folder)
    return folder


def build_classifier(
    folder: Path,
    labels: tuple[str, ...] = ("billing", "shipping", "other"),
    *,
    multi_label: bool = False,
    on_minilm: bool = False,
    seed: int = 3,
) -> Path:
    """A labeller: ``BertForSequenceClassification`` with ``id2label``; ``on_minilm``: its
    backbone is the bundled MiniLM's, bit for bit (a head trained on frozen embeddings)."""
    id2label = dict(enumerate(labels))
    problem = "multi_label_classification" if multi_label else "single_label_classification"
    if not on_minilm:
        return build_cross_encoder(folder, "bert", seed=seed, labels=len(labels),
                                   id2label=id2label, problem_type=problem)  # fmt: skip
    build_minilm_cross_encoder(folder, seed=seed)
    from safetensors.torch import load_file, save_file

    state = load_file(str(folder / "model.safetensors"))
    g = torch.Generator().manual_seed(seed)
    state["classifier.weight"] = 3 * torch.randn(len(labels), 384, generator=g) / 384**0.5
    state["classifier.bias"] = 0.3 * torch.randn(len(labels), generator=g)
    save_file(state, str(folder / "model.safetensors"))
    config = json.loads((folder / "config.json").read_text())
    config.update(num_labels=len(labels), problem_type=problem,
                  id2label={str(i): n for i, n in id2label.items()},
                  label2id={n: i for i, n in id2label.items()})  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def build_qwen3_reranker(
    folder: Path,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    seed: int = 0,
    card: bool = True,
) -> Path:
    """``Qwen3ForCausalLM`` with tied embeddings; ``card``: the README saying text-ranking."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(
        "qwen3", vocab_size=30522, hidden_size=hidden, intermediate_size=3 * hidden,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        head_dim=hidden // heads, max_position_embeddings=4096, rms_norm_eps=1e-6,
        pad_token_id=0, tie_word_embeddings=True, initializer_range=0.1,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).eval()
    _perturb(model, seed)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    copy_tokenizer(folder)
    if card:
        (folder / "README.md").write_text(QWEN3_CARD)
    return folder
