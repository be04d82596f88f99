"""The pooling layer of a loaded checkpoint: the poolers and heads its kind builds (dense
``embed`` + ``token_embed`` for encoders, ColBERT projections, the SPLADE MLM head, classifier
heads, BGE-M3's three outputs), rebuilt from its weights; all heads in fp32. Which poolers a kind
gets is its entry's ``build_poolers`` (``worker/engine/checkpoints/kinds/``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from poolq.worker.engine.checkpoints.checkpoint import SentenceTransformersInfo
from poolq.worker.engine.checkpoints.description import ModelConfig, ModelDescription
from poolq.worker.engine.checkpoints.kinds import PoolerInputs, kind_named
from poolq.worker.engine.checkpoints.kinds.embedding import dense_chain
from poolq.worker.engine.execution.tokenizer import TextTokenizer
from poolq.worker.pooling import DispatchPooler


def build_pooler(
    st: SentenceTransformersInfo | None,
    path: Path,
    config: dict[str, Any],
    desc: ModelDescription,
    cfg: ModelConfig,
    state: dict[str, torch.Tensor],
    tok: TextTokenizer,
) -> DispatchPooler:
    inputs = PoolerInputs(st, path, config, desc, cfg, state, tok)
    return kind_named(desc.kind).build_poolers(inputs)


__all__ = ["build_pooler", "dense_chain"]
