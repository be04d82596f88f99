"""Which kind of pooling checkpoint a folder holds, from its files, ``architectures`` and
``model_type`` (nothing is built or run)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from poolq.worker.engine.checkpoint import SentenceTransformersInfo
from poolq.worker.engine.description import ModelKind
from poolq.worker.engine.models import FALLBACK_CAUSAL_TYPES, architecture_for


def is_causal(config: Mapping[str, Any]) -> bool:
    """A decoder: a causal family of the registry, a known fallback decoder, or a config that
    says so (``is_decoder``, a ``*ForCausalLM`` architecture)."""
    arch = architecture_for(config.get("model_type"))
    if arch is not None:
        return arch.causal
    archs = " ".join(str(a) for a in config.get("architectures") or [])
    return (
        bool(config.get("is_decoder"))
        or "CausalLM" in archs
        or config.get("model_type") in FALLBACK_CAUSAL_TYPES
    )


def recognize_kind(
    config: Mapping[str, Any],
    path: Path,
    shapes: Mapping[str, tuple[int, ...]],
    st: SentenceTransformersInfo | None,
) -> ModelKind:
    archs = [str(a) for a in config.get("architectures") or []]
    arch = archs[0] if archs else ""
    if (path / "colbert_linear.pt").is_file() or (path / "sparse_linear.pt").is_file():
        return "bge_m3"
    if arch == "HF_ColBERT" or "linear.weight" in shapes:
        return "colbert"
    if st is not None and any("pylate" in t.lower() for t in st.module_types):
        return "colbert"
    if arch.endswith("ForMaskedLM"):
        return "masked_lm"
    if arch.endswith("ForSequenceClassification"):
        return "classifier"
    if is_causal(config):
        return "decoder"
    return "encoder"
