"""What an encode that imports no torch needs to know of a model, saved beside its cached graph.

``poolq encode --backend openvino`` spends much of a second start importing torch, for an
engine and poolers that, for dense ``embed`` on a converted model, reduce to: tokenize, run
the cached graph, take one row or the mean of each text's rows, normalise. When a start that
did load the model (torch, the full pooler) finds its ``embed`` pooler is exactly that, it
writes :class:`DirectPlan` (the pooling method, the normalisation, the widths, the prompts and
the max length, as the loader decided them) into the fp32 graph's cache folder. A later
``poolq encode`` that asks for nothing else (``runtime/direct_encode.py`` says what) reads it
and runs the graph itself (``direct_pool.py``); anything else loads the whole model.

The plan is keyed like the graph (the checkpoint's fingerprint, the form version, the OpenVINO
version: ``cache.py``) and carries its own version and poolq's: a plan written by another
poolq, or by a start with non-default model settings, is never read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from poolq.wire.version import __version__

if TYPE_CHECKING:
    from poolq.worker.engine.checkpoints.loader import PoolingModel

PLAN_FILE = "direct-embed.json"
PLAN_VERSION = 1
METHODS = ("CLS", "MEAN", "LAST")


@dataclass(frozen=True)
class DirectPlan:
    """The ``embed`` pooler of a model with no projector, in plain values."""

    model_id: str
    pooling: str  # CLS, MEAN or LAST
    normalize: bool  # the model's default (a request may turn it off)
    hidden_size: int  # = the embed width (no projector)
    max_length: int  # tokens, the tokenizer truncates there
    prompts: tuple[tuple[str, str], ...] = ()
    default_prompt_name: str | None = None
    poolq: str = ""
    version: int = PLAN_VERSION

    def prompt(self, name: str | None) -> str | None:
        """The text prefix of prompt ``name`` ('' for none); None when the model has no such
        prompt (the full start then reports the error)."""
        name = self.default_prompt_name if name is None else name
        if name is None:
            return ""
        return dict(self.prompts).get(name)

    def encode(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def decode(cls, text: str) -> DirectPlan | None:
        """The plan in ``text``; None when it is unreadable, or of another version or poolq."""
        try:
            data: dict[str, Any] = json.loads(text)
            data["prompts"] = tuple((str(a), str(b)) for a, b in data.get("prompts", ()))
            plan = cls(**data)
        except (ValueError, TypeError):
            return None
        if plan.version != PLAN_VERSION or plan.poolq != __version__:
            return None
        if plan.pooling not in METHODS or plan.hidden_size < 1 or plan.max_length < 1:
            return None
        return plan


def plan_for(model: PoolingModel) -> DirectPlan | None:
    """The plan of a loaded model, when its ``embed`` is a CLS/MEAN/LAST row of the hidden
    states, no projector, fp32, and its settings are the defaults (what ``poolq encode``
    loads); else None."""
    from poolq.worker.engine.checkpoints.description import ModelConfig
    from poolq.worker.pooling import EmbeddingHead, SequencePooler

    desc, cfg = model.description, model.config
    if dataclasses.replace(cfg, dtype=None, device=None) != ModelConfig(model=cfg.model):
        return None
    pooler = model.pooler.poolers_by_task.get("embed")
    if not isinstance(pooler, SequencePooler) or not isinstance(pooler.head, EmbeddingHead):
        return None
    head = pooler.head
    if head.projector is not None or str(head.head_dtype) != "torch.float32":
        return None
    if (
        desc.input_forms is not None
        or getattr(pooler.method, "name", None) not in METHODS
        or desc.pooling != pooler.method.name
        or head.output_dim != desc.hidden_size
        or head.normalize != desc.normalize
    ):
        return None
    return DirectPlan(
        model_id=desc.model_id,
        pooling=desc.pooling,
        normalize=desc.normalize,
        hidden_size=desc.hidden_size,
        max_length=desc.max_length,
        prompts=desc.prompts,
        default_prompt_name=desc.default_prompt_name,
        poolq=__version__,
    )


def write(key: str, plan: DirectPlan) -> None:
    """Save ``plan`` beside the graph ``key`` (atomically; a cache that cannot be written only
    costs the next start its torch import)."""
    from poolq.worker.engine.openvino import cache

    path = cache.cache_root() / key / PLAN_FILE
    text = plan.encode()
    with contextlib.suppress(OSError):
        if path.is_file() and path.read_text() == text:
            return
        tmp = path.with_name(f"{PLAN_FILE}.{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(path)


def read(key: str) -> DirectPlan | None:
    from poolq.worker.engine.openvino import cache

    try:
        return DirectPlan.decode((cache.cache_root() / key / PLAN_FILE).read_text())
    except OSError:
        return None
