"""The filter language of ``poolq search --filter``, parsed into plain conditions.

``key=value``, ``key!=value`` and ranges ``key>n``, ``key>=n``, ``key<n``, ``key<=n``, all of
them required (AND). Keys are the top-level payload fields of ``wire/payload.py`` (``doc_id``,
``chunk_index``, ``meta_hash``, ``profile_version``, ..., ``models.<vector>``) or, for anything
else, the document's ``metadata`` (``lang=en`` is ``metadata.lang``; nested keys with dots).
Values: ``true``/``false``, integers and strings match exactly; a number with a fraction matches
the equal number. Range values must be numbers.

Labels (``labels.<name>``, written by a profile's classifiers): ``labels.topic=billing`` matches
a chunk whose ``topic`` label is ``billing`` (one of its labels, for a multi-label classifier);
``labels.topic.score>=0.8`` reads the label's score.

Plain Python (the client validates filters before sending them); ``sinks/qdrant_filters.py`` turns
conditions into a Qdrant filter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from poolq.wire.payload import LABELS, METADATA, OBJECT_FIELDS, TOP_LEVEL_FIELDS
from poolq.wire.search_results import SearchError

_FILTER_RE = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(!=|>=|<=|=|>|<)\s*(.*?)\s*$", re.S)
_BOUNDS = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}


@dataclass(frozen=True)
class Condition:
    """One parsed filter: ``match`` (``value`` equals, or with ``negate`` differs) or ``range``
    (``bounds``: gt/gte/lt/lte -> number) on the payload ``path``."""

    path: str
    kind: Literal["match", "range"]
    value: str | int | bool | None = None
    bounds: tuple[tuple[str, float], ...] = ()
    negate: bool = False


def payload_path(key: str) -> str:
    """The payload path a filter key names: a top-level field, a path inside one holding an
    object (``metadata.lang``, ``models.dense``), else a path in ``metadata``."""
    head, dot, _ = key.partition(".")
    if key in TOP_LEVEL_FIELDS or (dot and head in OBJECT_FIELDS):
        return key
    return f"{METADATA}.{key}"


def label_name(path: str) -> str | None:
    """The label a payload path names (``labels.topic`` and ``labels.topic.score``: topic)."""
    head, _, rest = path.partition(".")
    return rest.split(".", 1)[0] or None if head == LABELS else None


def parse_conditions(exprs: Sequence[str]) -> list[Condition]:
    out: list[Condition] = []
    for expr in exprs:
        m = _FILTER_RE.match(expr) if isinstance(expr, str) else None
        if m is None:
            raise SearchError(
                f"filter {expr!r}: expected KEY=VALUE, KEY!=VALUE or KEY>N / KEY>=N / KEY<N / "
                "KEY<=N (for example lang=en or year>=2020)"
            )
        key, op, raw = m.groups()
        path = payload_path(key)
        if op in ("=", "!="):
            out.append(_match(path, raw, expr, negate=op == "!="))
        else:
            number = _number(raw)
            if number is None:
                raise SearchError(f"filter {expr!r}: a range needs a number, got {raw!r}")
            if label_name(path) is not None and path.count(".") == 1:
                raise SearchError(
                    f"filter {expr!r}: a label matches its name ({key}=NAME); a range reads its "
                    f"score: {key}.score>=N"
                )
            out.append(Condition(path, "range", bounds=((_BOUNDS[op], number),)))
    return out


def _number(raw: str) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _match(path: str, raw: str, expr: str, *, negate: bool) -> Condition:
    if raw == "":
        raise SearchError(f"filter {expr!r}: expected a value after the operator")
    value: str | int | bool
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":  # quoted: always a string
        value = raw[1:-1]
    elif raw.lower() in ("true", "false"):
        value = raw.lower() == "true"
    elif re.fullmatch(r"[+-]?\d+", raw):
        value = int(raw)
    else:
        number = _number(raw)
        if number is not None and re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", raw):
            return Condition(
                path, "range", bounds=(("gte", number), ("lte", number)), negate=negate
            )
        value = raw
    return Condition(path, "match", value=value, negate=negate)
