"""The profile's scoring models: one reranker for searches, classifiers for labels at ingest.

TOML form (both tables optional)::

    [reranker]
    model = "BAAI/bge-reranker-v2-m3"   # folder, hub id or bundled name
    candidates = 30                     # chunks re-scored per search (default 30)

    [labels]
    topic = { model = "path/to/classifier" }                 # *ForSequenceClassification
    tags  = { model = "path/to/multi-label", threshold = 0.4 }

A reranker is a one-label cross-encoder (``*ForSequenceClassification``) or an LLM reranker
(the Qwen3-Reranker form): it re-scores every search's candidates on the worker's query lane
(``worker/runtime/reranking.py``); it changes no point, so it is not part of the profile
version. Labels are written into each chunk's payload (``labels.<name>``) and are part of it.
Options of these models (``dtype``, ``max_length``, ``classifier_from_token``, ...) go in their
``[models."..."]`` table, as for the vectors' models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from poolq.worker.config.tables import checked_table
from poolq.worker.engine.checkpoints.description import token_pair

DEFAULT_CANDIDATES = 30
MAX_CANDIDATES = 1000
DEFAULT_LABEL_THRESHOLD = 0.5
_RERANKER_KEYS = ("model", "candidates")
_LABEL_KEYS = ("model", "threshold")
_LABEL_NAME = re.compile(r"[A-Za-z_][\w\-]*")  # a filter key's part: labels.<name>=...


@dataclass(frozen=True)
class RerankerConfig:
    model: str  # as written in the profile (a folder, hub id or bundled name)
    candidates: int = DEFAULT_CANDIDATES

    @classmethod
    def from_dict(cls, data: Any) -> RerankerConfig | None:
        if data is None:
            return None
        data = checked_table("profile: [reranker]", data, _RERANKER_KEYS)
        model = data.get("model")
        if not isinstance(model, str) or not model:
            raise ValueError(
                f"profile: [reranker] model: expected a folder, hub id or bundled name, got "
                f"{model!r}"
            )
        n = data.get("candidates", DEFAULT_CANDIDATES)
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_CANDIDATES:
            raise ValueError(
                f"profile: [reranker] candidates: expected an integer in 1..{MAX_CANDIDATES}, "
                f"got {n!r}"
            )
        return cls(model, n)


@dataclass(frozen=True)
class LabelConfig:
    name: str  # the payload's labels.<name>
    model: str
    threshold: float | None = None  # multi-label models: the labels scoring at least this

    @classmethod
    def many_from_dict(cls, data: Any) -> tuple[LabelConfig, ...]:
        if data is None:
            return ()
        if not isinstance(data, dict):
            raise ValueError(
                f"profile: [labels] must be a table of name = {{ model = ... }}, got "
                f"{type(data).__name__}"
            )
        out = []
        for name, spec in data.items():
            where = f"profile: label {name!r}"
            if not _LABEL_NAME.fullmatch(name):
                raise ValueError(f"{where}: a name is letters, digits, '_' and '-'")
            spec = checked_table(where, spec, _LABEL_KEYS)
            model = spec.get("model")
            if not isinstance(model, str) or not model:
                raise ValueError(
                    f"{where}: model: expected a classifier's folder or hub id, got {model!r}"
                )
            t = spec.get("threshold")
            if t is not None and (
                isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t <= 1
            ):
                raise ValueError(f"{where}: threshold: expected a number in 0..1, got {t!r}")
            out.append(cls(name, model, None if t is None else float(t)))
        return tuple(out)


def check_scoring_options(model: str, opts: dict[str, Any]) -> None:
    """The model options of LLM rerankers (``classifier_from_token``, ``score_instruction``)."""
    if (tokens := opts.get("classifier_from_token")) is not None:
        try:
            token_pair(tokens)
        except ValueError as exc:
            raise ValueError(f"profile: model {model!r}: {exc}") from None
    instruction = opts.get("score_instruction")
    if instruction is not None and (not isinstance(instruction, str) or not instruction):
        raise ValueError(
            f"profile: model {model!r}: score_instruction: expected a non-empty string, got "
            f"{instruction!r}"
        )
