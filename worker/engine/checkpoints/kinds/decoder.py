"""``decoder``: a causal embedding model (Qwen3-Embedding, E5-Mistral): the encoder's tasks and
poolers, LAST pooling when nothing else says, normalized unless the user says otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from poolq.worker.engine.checkpoints.kinds.embedding import (
    embed_pooling,
    embedding_poolers,
    embedding_tasks,
)
from poolq.worker.engine.checkpoints.kinds.registry import CheckpointKind
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


DECODER = CheckpointKind(
    name="decoder",
    recognize=lambda ck: is_causal(ck.config),
    tasks=embedding_tasks,
    build_poolers=embedding_poolers,
    pooling=partial(embed_pooling, default="LAST"),
)
