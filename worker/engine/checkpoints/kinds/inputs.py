"""What a checkpoint kind's functions read: the opened folder (:class:`Checkpoint`: recognition,
tasks, pooling choice) and, once the model is described and its weights loaded, what its poolers
are built from (:class:`PoolerInputs`). Nothing here is built or run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from poolq.worker.engine.checkpoints.checkpoint import (
    SentenceTransformersInfo,
    read_config,
    read_sentence_transformers,
    resolve_model_path,
    weight_shapes,
)
from poolq.worker.engine.checkpoints.description import ModelConfig, ModelDescription
from poolq.worker.engine.execution.tokenizer import TextTokenizer


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint's files as read before anything is built: ``config.json``, the
    sentence-transformers metadata (``modules.json`` & co., ``None`` without), and the shapes of
    its main weights (safetensors headers)."""

    model_id: str  # as the user named it (hub id or folder)
    path: Path
    config: dict[str, Any]
    st: SentenceTransformersInfo | None
    shapes: dict[str, tuple[int, ...]]

    @classmethod
    def open(cls, name_or_path: str) -> Checkpoint:
        path = resolve_model_path(name_or_path)
        return cls(
            name_or_path,
            path,
            read_config(path),
            read_sentence_transformers(path),
            weight_shapes(path),
        )

    @property
    def architecture(self) -> str:
        """The first of ``architectures`` (``BertForMaskedLM``, ``HF_ColBERT``); '' if none."""
        archs = self.config.get("architectures") or []
        return str(archs[0]) if archs else ""

    @property
    def hidden_size(self) -> int:
        c = self.config
        return int(c.get("hidden_size") or c.get("d_model") or c.get("dim") or 0)

    @property
    def vocab_size(self) -> int:
        return int(self.config.get("vocab_size", 0))

    @property
    def embed_dim(self) -> int:
        """The sentence embedding's size: the last sentence-transformers Dense module's output,
        else the hidden size."""
        st = self.st
        return st.dense[-1].out_features if st and st.dense else self.hidden_size

    def has_file(self, name: str) -> bool:
        return (self.path / name).is_file()

    @property
    def pipeline_tag(self) -> str | None:
        """The model card's ``pipeline_tag`` (``README.md``'s front matter), if it has one."""
        readme = self.path / "README.md"
        if not readme.is_file():
            return None
        text = readme.read_text(encoding="utf-8", errors="replace")
        if not text.startswith("---"):
            return None
        front = text[3:].split("\n---", 1)[0]
        found = re.search(r"^pipeline_tag:\s*['\"]?([\w-]+)", front, re.M)
        return found.group(1) if found else None


@dataclass(frozen=True)
class PoolerInputs:
    """What a kind builds its poolers from: the checkpoint's folder, metadata and weights (empty
    when no head needs them), its description, the user's choices and its tokenizer."""

    st: SentenceTransformersInfo | None
    path: Path
    config: dict[str, Any]
    desc: ModelDescription
    cfg: ModelConfig
    state: dict[str, torch.Tensor]
    tok: TextTokenizer

    @property
    def special_token_ids(self) -> list[int]:
        """Every id the tokenizer marks special, sorted."""
        return sorted(self.tok.special_token_ids)

    @property
    def token_embed_skip(self) -> list[int]:
        """Rows a multi-vector leaves out: the special tokens when the user asks
        (``token_embed_skip_special``), else none."""
        return self.special_token_ids if self.cfg.token_embed_skip_special else []
