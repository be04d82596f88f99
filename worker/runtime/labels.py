"""Labels at ingest: the profile's classifiers (``[labels]``) read each chunk in the same engines
and batches as its vectors, and their outputs become the payload's ``labels.<name>``:
``{"label": ..., "score": ...}`` (the top class), or for a multi-label model (``problem_type``
``multi_label_classification``) the list of labels scoring at least the threshold (default
0.5), best first.

A classifier on the same backbone as a vector model (the same family, weights, bit for bit, and
tokenizer: a head trained on frozen embeddings) does not get an engine of its own: its head
joins that model's poolers as ``classify`` and reads the same forward pass, as BGE-M3's heads
do. The vector model's precision and backend then apply; one quantized differently (int8,
OpenVINO) has other weights and is not shared. Several such heads on one backbone stack their
scores side by side (``pooling/stacked.py``), each reading its own slice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from poolq.worker.config.profile import Profile
from poolq.worker.config.scoring import DEFAULT_LABEL_THRESHOLD, LabelConfig
from poolq.worker.engine.checkpoints.loader import PoolingModel
from poolq.worker.pooling import DispatchPooler, Pooler, StackedPooler

MULTI_LABEL = "multi_label_classification"


@dataclass(frozen=True)
class LabelReader:
    """One profile label: its classes (``id2label``, in order), where its scores lie in the
    ``classify`` output it reads (``offset``), and how they become a payload value."""

    name: str
    classes: tuple[str, ...]
    multi_label: bool
    threshold: float
    offset: int = 0

    def read(self, scores: np.ndarray) -> dict[str, Any] | list[dict[str, Any]]:
        s = scores[self.offset : self.offset + len(self.classes)]

        def scored(i: int) -> dict[str, Any]:
            return {"label": self.classes[i], "score": round(float(s[i]), 4)}

        if not self.multi_label:
            return scored(int(np.argmax(s)))
        return [scored(i) for i in np.argsort(-s, kind="stable") if s[i] >= self.threshold]


def _classes(config: Mapping[str, Any], n: int) -> tuple[str, ...]:
    raw = config.get("id2label") or {}
    by_id = {int(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    return tuple(by_id.get(i, f"LABEL_{i}") for i in range(n))


def label_reader(label: LabelConfig, model: PoolingModel, offset: int = 0) -> LabelReader:
    """The reader of ``label`` from its loaded classifier (refused when it is none)."""
    desc = model.description
    where = f"profile: label {label.name!r}: model {label.model!r}"
    if "classify" not in desc.supported_tasks:
        raise ValueError(
            f"{where} is not a classifier (*ForSequenceClassification with id2label); its "
            f"tasks: {list(desc.supported_tasks)}"
        )
    config = json.loads((Path(desc.path) / "config.json").read_text(encoding="utf-8"))
    multi = config.get("problem_type") == MULTI_LABEL
    if label.threshold is not None and not multi:
        raise ValueError(
            f"{where}: threshold applies to multi-label models (problem_type {MULTI_LABEL!r}); "
            f"this one gives one label"
        )
    n = desc.output_dim("classify")
    threshold = DEFAULT_LABEL_THRESHOLD if label.threshold is None else label.threshold
    return LabelReader(label.name, _classes(config, n), multi, threshold, offset)


def same_backbone(a: PoolingModel, b: PoolingModel) -> bool:
    """Whether ``a`` and ``b`` run the same encoder on the same tokens: the same packed module,
    equal weights (as loaded, on torch), the same tokenizer but for its truncation."""
    da, db = a.description, b.description
    if not (da.native_encoder and db.native_encoder) or da.model_type != db.model_type:
        return False
    if type(a.encoder) is not type(b.encoder) or a.device != b.device or a.dtype != b.dtype:
        return False
    if _tokenizer_spec(a) != _tokenizer_spec(b):
        return False
    sa, sb = a.encoder.state_dict(), b.encoder.state_dict()
    return sa.keys() == sb.keys() and all(
        sa[k].shape == sb[k].shape and torch.equal(sa[k], sb[k]) for k in sa
    )


def _tokenizer_spec(m: PoolingModel) -> dict[str, Any]:
    spec = json.loads(m.tokenizer.backend.to_str())
    spec.pop("truncation", None)
    spec.pop("padding", None)
    return spec


def with_heads(model: PoolingModel, heads: Sequence[Pooler]) -> None:
    """Add ``heads`` (the ``classify`` poolers of classifiers on ``model``'s backbone) to its
    poolers, in place, stacked in order."""
    for head in heads:
        head.to(model.device).eval()
        for p in head.parameters():
            p.requires_grad_(False)
    by_task: dict[str, Pooler] = {str(t): p for t, p in model.pooler.poolers_by_task.items()}
    if "classify" in by_task:
        raise ValueError(f"model {model.description.model_id!r} already serves 'classify'")
    by_task["classify"] = StackedPooler("classify", list(heads))
    model.pooler = DispatchPooler(by_task)


def read_labels(readers: Sequence[LabelReader], scores: torch.Tensor) -> dict[str, Any]:
    """One chunk's ``labels`` payload from the ``classify`` scores its readers share."""
    values = scores.numpy()
    return {r.name: r.read(values) for r in readers}


def label_plan(profile: Profile, models: dict[str, PoolingModel]) -> dict[str, list[LabelReader]]:
    """Per engine, the readers of its ``classify`` output: a classifier on a vector model's
    backbone joins that model's engine as a head (``labels.with_heads``; its own engine is
    not started), any other runs in its own."""
    readers: dict[str, list[LabelReader]] = {}
    heads: dict[str, list[str]] = {}  # vector model -> classifiers read on its forward
    for model in dict.fromkeys(x.model for x in profile.labels):
        if profile.vectors_of(model):
            raise ValueError(
                f"profile: model {model!r} makes vectors: a label needs a classifier "
                "(*ForSequenceClassification)"
            )
        # refused here when it is no classifier
        own = [label_reader(x, models[model]) for x in profile.labels_of(model)]
        host = next(
            (v for v in dict.fromkeys(x.model for x in profile.vectors)
             if same_backbone(models[v], models[model])),
            None,
        )  # fmt: skip
        if host is None:
            readers[model] = own
            continue
        heads.setdefault(host, []).append(model)
    for host, classifiers in heads.items():
        offset, host_readers = 0, []
        for model in classifiers:
            for label in profile.labels_of(model):
                host_readers.append(label_reader(label, models[model], offset))
            offset += models[model].description.output_dim("classify")
        with_heads(
            models[host], [models[m].pooler.poolers_by_task["classify"] for m in classifiers]
        )
        readers[host] = host_readers
    return readers
