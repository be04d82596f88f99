"""``classifier``: a ``*ForSequenceClassification`` checkpoint (a reranker or a labeller):
``classify`` from the CLS row through the family's head, the activation from the
sentence-transformers CrossEncoder metadata, else from ``problem_type`` and the label count."""

from __future__ import annotations

from poolq.worker.engine.checkpoints.checkpoint_heads import classifier_from_state
from poolq.worker.engine.checkpoints.kinds.inputs import Checkpoint, PoolerInputs
from poolq.worker.engine.checkpoints.kinds.registry import CheckpointKind
from poolq.worker.pooling import ClassifierHead, DispatchPooler, SequencePooler, sequence_method
from poolq.worker.pooling.activations import activation_from_name, classification_activation
from poolq.worker.pooling.tasks import PoolingTask


def _tasks(ck: Checkpoint) -> dict[PoolingTask, int]:
    # the classifier's weight is the truth (transformers 5 omits the default num_labels=2)
    out_w = ck.shapes.get("classifier.out_proj.weight") or ck.shapes.get("classifier.weight")
    c = ck.config
    labels = (
        int(out_w[0]) if out_w else int(c.get("num_labels") or len(c.get("id2label") or {}) or 2)
    )
    return {"classify": labels}


def _poolers(p: PoolerInputs) -> DispatchPooler:
    num_labels = p.desc.output_dim("classify")
    act_name = (p.st.activation_fn if p.st else None) or (
        p.config.get("sentence_transformers") or {}
    ).get("activation_fn")
    act = (
        activation_from_name(act_name)
        if act_name
        else classification_activation(p.config.get("problem_type"), num_labels)
    )
    head = ClassifierHead(classifier_from_state(p.state, p.config), act, num_labels=num_labels)
    return DispatchPooler({"classify": SequencePooler(sequence_method("CLS"), head)})


CLASSIFIER = CheckpointKind(
    name="classifier",
    recognize=lambda ck: ck.architecture.endswith("ForSequenceClassification"),
    tasks=_tasks,
    build_poolers=_poolers,
    head_weights=True,
)
