"""``masked_lm``: a ``*ForMaskedLM`` checkpoint served as SPLADE: ``sparse`` over the vocabulary
from the family's MLM head (``max`` or ``sum`` over the text's tokens, ``splade_mode``); the
tokenizer's own CLS / SEP / BOS / EOS rows left out when ``splade_remove_special`` asks."""

from __future__ import annotations

from poolq.worker.engine.checkpoints.checkpoint_heads import mlm_head_from_state
from poolq.worker.engine.checkpoints.kinds.inputs import Checkpoint, PoolerInputs
from poolq.worker.engine.checkpoints.kinds.registry import CheckpointKind
from poolq.worker.engine.checkpoints.kinds.special_tokens import boundary_token_ids
from poolq.worker.pooling import DispatchPooler, SpladePooler
from poolq.worker.pooling.tasks import PoolingTask


def _tasks(ck: Checkpoint) -> dict[PoolingTask, int]:
    return {"sparse": ck.vocab_size}


def _poolers(p: PoolerInputs) -> DispatchPooler:
    remove = boundary_token_ids(p.path, p.tok) if p.cfg.splade_remove_special else []
    sparse = SpladePooler(
        mlm_head_from_state(p.state, p.config),
        p.desc.vocab_size,
        mode=p.cfg.splade_mode,
        remove_token_ids=remove,
    )
    return DispatchPooler({"sparse": sparse})


MASKED_LM = CheckpointKind(
    name="masked_lm",
    recognize=lambda ck: ck.architecture.endswith("ForMaskedLM"),
    tasks=_tasks,
    build_poolers=_poolers,
    head_weights=True,
)
