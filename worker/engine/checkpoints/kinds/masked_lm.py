"""``masked_lm``: a ``*ForMaskedLM`` checkpoint served as SPLADE: ``sparse`` over the vocabulary
from the family's MLM head (``max`` or ``sum`` over the text's tokens, ``splade_mode``); the
tokenizer's own CLS / SEP / BOS / EOS rows left out when ``splade_remove_special`` asks."""

from __future__ import annotations

from poolq.worker.engine.checkpoints.checkpoint_heads import family_head
from poolq.worker.engine.checkpoints.kinds.inputs import PoolerInputs
from poolq.worker.engine.checkpoints.kinds.registry import CheckpointKind
from poolq.worker.engine.checkpoints.kinds.special_tokens import boundary_token_ids
from poolq.worker.pooling import DispatchPooler, SpladePooler


def _poolers(p: PoolerInputs) -> DispatchPooler:
    remove = boundary_token_ids(p.path, p.tok) if p.cfg.splade_remove_special else []
    sparse = SpladePooler(
        family_head(p.state, p.config, "mlm_head"),
        p.desc.vocab_size,
        mode=p.cfg.splade_mode,
        remove_token_ids=remove,
    )
    return DispatchPooler({"sparse": sparse})


MASKED_LM = CheckpointKind(
    name="masked_lm",
    recognize=lambda ck: ck.architecture.endswith("ForMaskedLM"),
    tasks=lambda ck: {"sparse": ck.vocab_size},
    build_poolers=_poolers,
    head_weights=True,
)
