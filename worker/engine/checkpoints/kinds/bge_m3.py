"""``bge_m3``: BGE-M3's layout, an encoder with ``sparse_linear.pt`` (hidden -> 1: a weight per
token) and/or ``colbert_linear.pt`` (hidden -> d: a vector per token but the first) saved beside
it: ``embed`` (CLS, normalized), ``sparse`` over the vocabulary and ``token_embed``, all from one
forward (``pooling/multi_output.py``). The files decide, whatever ``architectures`` says."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import torch
from torch import nn

from poolq.worker.engine.checkpoints.checkpoint_heads import linear_from
from poolq.worker.engine.checkpoints.kinds.embedding import embed_pooling
from poolq.worker.engine.checkpoints.kinds.inputs import Checkpoint, PoolerInputs
from poolq.worker.engine.checkpoints.kinds.registry import CheckpointKind
from poolq.worker.pooling import DispatchPooler, multi_output_pooler
from poolq.worker.pooling.tasks import PoolingTask

SPARSE_LINEAR = "sparse_linear.pt"
COLBERT_LINEAR = "colbert_linear.pt"


def _load(path: Path) -> dict[str, torch.Tensor]:
    return dict(torch.load(path, map_location="cpu", weights_only=True))


def _linear(folder: Path, name: str) -> nn.Linear | None:
    f = folder / name
    if not f.is_file():
        return None
    w = _load(f)
    return linear_from(w["weight"], w.get("bias"))


def _tasks(ck: Checkpoint) -> dict[PoolingTask, int]:
    tasks: dict[PoolingTask, int] = {"embed": ck.embed_dim}
    if ck.has_file(COLBERT_LINEAR):
        tasks["token_embed"] = int(_load(ck.path / COLBERT_LINEAR)["weight"].shape[0])
    tasks["sparse"] = ck.vocab_size
    return tasks


def _poolers(p: PoolerInputs) -> DispatchPooler:
    return multi_output_pooler(
        hidden_size=p.desc.hidden_size,
        vocab_size=p.desc.vocab_size,
        special_token_ids=p.special_token_ids,
        sparse_linear=_linear(p.path, SPARSE_LINEAR),
        colbert_linear=_linear(p.path, COLBERT_LINEAR),
    )


BGE_M3 = CheckpointKind(
    name="bge_m3",
    recognize=lambda ck: ck.has_file(COLBERT_LINEAR) or ck.has_file(SPARSE_LINEAR),
    tasks=_tasks,
    build_poolers=_poolers,
    # the Pooling module's mode is not read: BGE-M3's dense output is its CLS row
    pooling=partial(embed_pooling, read_st=False),
)
