"""The checkpoint-kind registry: one module per kind, one entry each (``registry.py``), in
precedence order.

``recognize(checkpoint)`` names the kind of an opened checkpoint: the first entry whose
predicate holds. BGE-M3's head files beat everything (its backbone may say ``ForMaskedLM``),
ColBERT's projection beats the backbone's ``architectures``, the ``*ForMaskedLM`` /
``*ForSequenceClassification`` heads come next, then LLM rerankers (a causal LM whose files name
its yes/no tokens), then causal models, and ``encoder`` takes the rest. ``kind_named(desc.kind)``
is how the loader finds what a described model's kind does; it names no kind.
"""

from __future__ import annotations

from poolq.worker.engine.checkpoints.kinds.bge_m3 import BGE_M3
from poolq.worker.engine.checkpoints.kinds.classifier import CLASSIFIER
from poolq.worker.engine.checkpoints.kinds.colbert import COLBERT
from poolq.worker.engine.checkpoints.kinds.decoder import DECODER
from poolq.worker.engine.checkpoints.kinds.encoder import ENCODER
from poolq.worker.engine.checkpoints.kinds.inputs import Checkpoint, PoolerInputs
from poolq.worker.engine.checkpoints.kinds.lm_reranker import LM_RERANKER
from poolq.worker.engine.checkpoints.kinds.masked_lm import MASKED_LM
from poolq.worker.engine.checkpoints.kinds.registry import CheckpointKind, KindRegistry

KINDS = KindRegistry((BGE_M3, COLBERT, MASKED_LM, CLASSIFIER, LM_RERANKER, DECODER, ENCODER))


def recognize(ck: Checkpoint) -> CheckpointKind:
    """The kind of an opened checkpoint (nothing is built or run)."""
    return KINDS.recognize(ck)


def kind_named(name: str) -> CheckpointKind:
    """The entry of a registered kind (a description's ``kind``)."""
    return KINDS.by_name(name)


__all__ = [
    "KINDS",
    "Checkpoint",
    "CheckpointKind",
    "KindRegistry",
    "PoolerInputs",
    "kind_named",
    "recognize",
]
