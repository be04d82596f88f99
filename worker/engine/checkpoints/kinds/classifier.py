"""``classifier``: a ``*ForSequenceClassification`` checkpoint (a cross-encoder or a labeller).

* ``classify``: class scores from the pooled row (CLS; ModernBERT's ``classifier_pooling``
  may say mean) through the family's head, the activation from the sentence-transformers
  metadata, else from ``problem_type`` and the label count (what
  ``AutoModelForSequenceClassification`` users apply);
* ``score`` (one label only): a (query, text) pair's relevance, formed as the tokenizer forms
  pairs (``pair_forms.SegmentPairs``), activated as sentence-transformers'
  ``CrossEncoder.predict`` does by default: the checkpoint's ``activation_fn`` where it names
  one, else a sigmoid.
"""

from __future__ import annotations

from torch import nn

from poolq.worker.engine.checkpoints.checkpoint_heads import family_head
from poolq.worker.engine.checkpoints.kinds.inputs import Checkpoint, PoolerInputs
from poolq.worker.engine.checkpoints.kinds.registry import CheckpointKind
from poolq.worker.engine.checkpoints.pair_forms import SegmentPairs, tokenizer_passes_type_ids
from poolq.worker.engine.models import architecture_for
from poolq.worker.pooling import (
    ClassifierHead,
    DispatchPooler,
    Pooler,
    ScoreHead,
    SequencePooler,
    sequence_method,
)
from poolq.worker.pooling.activations import activation_from_name, classification_activation
from poolq.worker.pooling.tasks import PoolingTask

_OUT_WEIGHTS = ("classifier.out_proj.weight", "classifier.weight")


def num_labels(ck: Checkpoint) -> int:
    # the classifier's weight is the truth (transformers 5 omits the default num_labels=2)
    out_w = next((ck.shapes[k] for k in _OUT_WEIGHTS if k in ck.shapes), None)
    c = ck.config
    if out_w:
        return int(out_w[0])
    return int(c.get("num_labels") or len(c.get("id2label") or {}) or 2)


def _tasks(ck: Checkpoint) -> dict[PoolingTask, int]:
    n = num_labels(ck)
    return {"score": 1, "classify": 1} if n == 1 else {"classify": n}


def _st_activation(p: PoolerInputs) -> nn.Module | None:
    name = (p.st.activation_fn if p.st else None) or (
        p.config.get("sentence_transformers") or {}
    ).get("activation_fn")
    return activation_from_name(name) if name else None


def _poolers(p: PoolerInputs) -> DispatchPooler:
    labels = p.desc.output_dim("classify")
    classifier = family_head(p.state, p.config, "classifier")
    st_act = _st_activation(p)
    act = st_act or classification_activation(p.config.get("problem_type"), labels)
    # the row the head reads: CLS, or the mean where classifier_pooling says so (ModernBERT)
    method = sequence_method("MEAN" if p.config.get("classifier_pooling") == "mean" else "CLS")
    poolers: dict[str, Pooler] = {
        "classify": SequencePooler(method, ClassifierHead(classifier, act, num_labels=labels))
    }
    if "score" in p.desc.supported_tasks:  # CrossEncoder.predict's default: a sigmoid
        poolers["score"] = SequencePooler(method, ScoreHead(classifier, st_act or nn.Sigmoid()))
    return DispatchPooler(poolers)


def reads_type_ids(ck: Checkpoint) -> bool:
    """Whether the model reads a pair's token type ids: a token-type embedding of two rows or
    more, and a tokenizer that passes them."""
    arch = architecture_for(ck.config.get("model_type"))
    config = arch.with_defaults(ck.config) if arch is not None else ck.config
    return int(config.get("type_vocab_size") or 0) >= 2 and tokenizer_passes_type_ids(ck.path)


CLASSIFIER = CheckpointKind(
    name="classifier",
    recognize=lambda ck: ck.architecture.endswith("ForSequenceClassification"),
    tasks=_tasks,
    build_poolers=_poolers,
    head_weights=True,
    pair_form=lambda ck, tok, max_length, cfg: SegmentPairs(type_ids=reads_type_ids(ck)),
)
