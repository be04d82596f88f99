"""Which kind of pooling checkpoint a folder holds, from its files, ``architectures`` and
``model_type`` (nothing is built or run): the checkpoint-kind registry's answer
(``worker/engine/checkpoints/kinds/``, in its precedence order), for callers holding the pieces of a
checkpoint rather than an opened one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from poolq.worker.engine.checkpoints.checkpoint import SentenceTransformersInfo
from poolq.worker.engine.checkpoints.description import ModelKind
from poolq.worker.engine.checkpoints.kinds import Checkpoint, recognize
from poolq.worker.engine.checkpoints.kinds.decoder import is_causal


def recognize_kind(
    config: Mapping[str, Any],
    path: Path,
    shapes: Mapping[str, tuple[int, ...]],
    st: SentenceTransformersInfo | None,
) -> ModelKind:
    return recognize(Checkpoint(str(path), path, dict(config), st, dict(shapes))).name


__all__ = ["is_causal", "recognize_kind"]
