"""A checkpoint on disk: its folder, config, sentence-transformers metadata and weights.

Reads only; builds nothing. Weights load from safetensors (single or sharded) or, failing that,
``pytorch_model.bin`` through ``torch.load(weights_only=True)`` (never unpickling code).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file


class ModelNotFoundError(FileNotFoundError):
    pass


def resolve_model_path(name_or_path: str | os.PathLike[str]) -> Path:
    """A local folder as is; a hub id through ``huggingface_hub`` (the local cache when offline)."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    name = str(name_or_path)
    if path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ModelNotFoundError(f"model folder {name!r} does not exist or is not a folder")
    from huggingface_hub import snapshot_download

    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    try:
        return Path(
            snapshot_download(
                name,
                local_files_only=offline,
                allow_patterns=[
                    "*.json",
                    "*.safetensors",
                    "*.txt",
                    "*.model",
                    "*.pt",
                    "README.md",  # the model card: its pipeline_tag names LLM rerankers
                    "1_*/*",
                    "2_*/*",
                    "3_*/*",
                ],
            )
        )
    except Exception as exc:
        hint = (
            "HF_HUB_OFFLINE is set and the model is not in the local cache"
            if offline
            else "the hub could not be reached (set HF_HUB_OFFLINE=1 to use the local cache only)"
        )
        raise ModelNotFoundError(
            f"model {name!r} is neither a local folder nor a downloadable hub id: {hint} ({type(exc).__name__}: {exc})"
        ) from exc


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file's object; {} when the file is missing or holds something else."""
    data = _read_json(path) if path.is_file() else {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class DenseModule:
    """A sentence-transformers ``Dense`` module: ``activation(Linear(in, out))``."""

    in_features: int
    out_features: int
    bias: bool
    activation: str
    folder: Path


@dataclass(frozen=True)
class SentenceTransformersInfo:
    module_types: tuple[str, ...]
    pooling_mode: str | None  # "cls" | "mean" | "lasttoken" | "max" | ...
    dense: tuple[DenseModule, ...]
    normalize: bool
    max_seq_length: int | None
    prompts: dict[str, str] = field(default_factory=dict)
    default_prompt_name: str | None = None
    activation_fn: str | None = None  # CrossEncoder


def _pooling_mode(cfg: dict[str, Any]) -> str:
    if "pooling_mode" in cfg and isinstance(cfg["pooling_mode"], str):
        return cfg["pooling_mode"]
    modes = [
        ("cls", "pooling_mode_cls_token"),
        ("mean", "pooling_mode_mean_tokens"),
        ("max", "pooling_mode_max_tokens"),
        ("mean_sqrt_len_tokens", "pooling_mode_mean_sqrt_len_tokens"),
        ("weightedmean", "pooling_mode_weightedmean_tokens"),
        ("lasttoken", "pooling_mode_lasttoken"),
    ]
    chosen = [name for name, key in modes if cfg.get(key)]
    if len(chosen) != 1:
        raise ValueError(
            f"sentence-transformers Pooling config: expected exactly one pooling mode, got {chosen or 'none'}"
        )
    return chosen[0]


def read_sentence_transformers(path: Path) -> SentenceTransformersInfo | None:
    modules_file = path / "modules.json"
    if not modules_file.is_file():
        return None
    modules = _read_json(modules_file)
    types: list[str] = []
    pooling_mode = None
    dense: list[DenseModule] = []
    normalize = False
    for m in modules:
        mtype = str(m.get("type", ""))
        types.append(mtype)
        folder = path / m.get("path", "")
        short = mtype.rsplit(".", 1)[-1]
        if short == "Pooling":
            pooling_mode = _pooling_mode(_read_json(folder / "config.json"))
        elif short == "Dense":
            cfg = _read_json(folder / "config.json")
            dense.append(
                DenseModule(
                    int(cfg["in_features"]),
                    int(cfg["out_features"]),
                    bool(cfg.get("bias", True)),
                    str(cfg.get("activation_function", "torch.nn.modules.linear.Identity")),
                    folder,
                )
            )
        elif short == "Normalize":
            normalize = True
    sbert = path / "sentence_bert_config.json"
    max_len = _read_json(sbert).get("max_seq_length") if sbert.is_file() else None
    st_cfg_file = path / "config_sentence_transformers.json"
    st_cfg = _read_json(st_cfg_file) if st_cfg_file.is_file() else {}
    return SentenceTransformersInfo(
        tuple(types),
        pooling_mode,
        tuple(dense),
        normalize,
        max_len,
        dict(st_cfg.get("prompts") or {}),
        st_cfg.get("default_prompt_name"),
        st_cfg.get("activation_fn"),
    )


def _rename_legacy(key: str) -> str:
    # Old TF-converted checkpoints name LayerNorm parameters gamma/beta.
    if key.endswith("LayerNorm.gamma"):
        return key[: -len("gamma")] + "weight"
    if key.endswith("LayerNorm.beta"):
        return key[: -len("beta")] + "bias"
    return key


def _safetensors_files(path: Path) -> list[Path]:
    """The main weights' safetensors files, single or sharded; [] when there are none."""
    index = path / "model.safetensors.index.json"
    if (path / "model.safetensors").is_file():
        return [path / "model.safetensors"]
    if index.is_file():
        return [path / s for s in sorted(set(_read_json(index)["weight_map"].values()))]
    return []


def load_weights(path: Path) -> dict[str, torch.Tensor]:
    """All tensors of the checkpoint's main weights, with legacy LayerNorm names normalised."""
    state: dict[str, torch.Tensor] = {}
    files = _safetensors_files(path)
    for f in files:
        state.update(load_file(str(f)))
    if not files and (path / "pytorch_model.bin").is_file():
        state = torch.load(path / "pytorch_model.bin", map_location="cpu", weights_only=True)
    elif not files:
        raise ModelNotFoundError(
            f"no weights in {path}: expected model.safetensors, model.safetensors.index.json or pytorch_model.bin"
        )
    return {_rename_legacy(k): v for k, v in state.items()}


def weight_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Tensor shapes without loading the tensors (safetensors headers only)."""
    files = _safetensors_files(path)
    if not files:
        return {k: tuple(v.shape) for k, v in load_weights(path).items()}
    shapes: dict[str, tuple[int, ...]] = {}
    for f in files:
        with safe_open(str(f), "pt") as st:
            for k in st.keys():  # noqa: SIM118 - safe_open is not a mapping
                shapes[_rename_legacy(k)] = tuple(st.get_slice(k).get_shape())
    return shapes


def load_dense_module(module: DenseModule) -> dict[str, torch.Tensor]:
    for name in ("model.safetensors", "pytorch_model.bin"):
        f = module.folder / name
        if f.is_file():
            if name.endswith(".safetensors"):
                return load_file(str(f))
            return torch.load(f, map_location="cpu", weights_only=True)
    raise ModelNotFoundError(f"no weights for the Dense module in {module.folder}")


def read_config(path: Path) -> dict[str, Any]:
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise ModelNotFoundError(f"no config.json in {path}")
    return dict(_read_json(cfg_file))
