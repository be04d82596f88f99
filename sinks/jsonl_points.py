"""Points as JSON lines, the format of ``poolq export`` and ``poolq import``::

    {"id": "...", "payload": {...}, "vector": {"dense": [...],
     "sparse": {"indices": [...], "values": [...]}, "colbert": [[...], ...]}}

Vector names are the collection's own. A dense vector is a list of numbers, a multi-vector a
list of such lists, a sparse vector its indices and values. Numbers are written exactly
(a float32 read back is the same float32). A point without some vector omits its key.

Reading checks every line and names the line, the point and the field of anything wrong.
"""

from __future__ import annotations

import json
import math
import uuid
from typing import Any

from qdrant_client import models

from poolq.sinks.schema import CollectionSchema, VectorKind, VectorSpec


class PointLineError(ValueError):
    """A JSON line that is not a point (the message names the line and the field)."""


def to_json_line(record: models.Record) -> str:
    vectors: dict[str, Any] = {}
    stored = record.vector if isinstance(record.vector, dict) else {}
    for name, value in sorted(stored.items()):  # names in order: the same point, the same line
        if isinstance(value, models.SparseVector):
            vectors[name] = {"indices": list(value.indices), "values": list(value.values)}
        else:
            vectors[name] = value
    line = {"id": str(record.id), "payload": record.payload or {}, "vector": vectors}
    return json.dumps(line, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _kind_and_size(value: Any) -> tuple[VectorKind, int | None]:
    """A parsed vector's kind and size (a sparse vector has none)."""
    if isinstance(value, models.SparseVector):
        return "sparse", None
    if value and isinstance(value[0], list):
        return "multi", len(value[0])
    return "dense", len(value)


def schema_of(line_no: int, point: models.PointStruct, name: str) -> CollectionSchema:
    """The collection a point's vectors need (names, kinds, sizes): import creates it."""
    assert isinstance(point.vector, dict)
    specs = [VectorSpec(n, *_kind_and_size(v), "imported") for n, v in point.vector.items()]
    if not specs:
        raise PointLineError(f"line {line_no}: point {point.id!r} has no vector to learn from")
    return CollectionSchema(name, tuple(specs))


def from_json_line(line_no: int, text: str) -> models.PointStruct:
    """One line as a point (raises :class:`PointLineError` naming what is wrong)."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise PointLineError(f"line {line_no}: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise PointLineError(f"line {line_no}: expected an object, got {type(data).__name__}")
    unknown = sorted(set(data) - {"id", "payload", "vector"})
    if unknown:
        raise PointLineError(
            f"line {line_no}: unknown keys {unknown}; expected id, payload, vector"
        )
    pid = _point_id(line_no, data.get("id"))
    payload = data.get("payload", {})
    if not isinstance(payload, dict):
        raise PointLineError(f"line {line_no}: point {pid!r}: payload must be an object")
    raw = data.get("vector")
    if not isinstance(raw, dict):
        raise PointLineError(f"line {line_no}: point {pid!r}: vector must be an object of names")
    vectors = {name: _vector(line_no, pid, name, v) for name, v in raw.items()}
    return models.PointStruct.model_construct(id=pid, vector=vectors, payload=payload)


def check_point(line_no: int, point: models.PointStruct, schema: CollectionSchema) -> None:
    """Refuse a point whose vectors the collection does not have (name, kind, size)."""
    assert isinstance(point.vector, dict)
    value: Any
    for name, value in point.vector.items():
        try:
            spec = schema.vector(name)
        except KeyError:
            have = ", ".join(v.name for v in schema.vectors)
            raise PointLineError(
                f"line {line_no}: point {point.id!r}: vector {name!r} is not in the collection "
                f"(it has {have})"
            ) from None
        kind, size = _kind_and_size(value)
        if (kind, size) != (spec.kind, spec.size):
            want = spec.kind if spec.size is None else f"{spec.kind} of size {spec.size}"
            got = kind if size is None else f"{kind} of size {size}"
            raise PointLineError(
                f"line {line_no}: point {point.id!r}: vector {name!r} is {got}; the collection's "
                f"is {want}"
            )


def _point_id(line_no: int, raw: Any) -> str | int:
    if isinstance(raw, str) and raw.isdigit():
        return int(raw)
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        return raw
    if isinstance(raw, str):
        try:
            return str(uuid.UUID(raw))
        except ValueError:
            pass
    raise PointLineError(f"line {line_no}: id must be a UUID or an unsigned integer, got {raw!r}")


def _numbers(line_no: int, pid: Any, name: str, xs: Any) -> list[float]:
    if not isinstance(xs, list) or not xs:
        raise PointLineError(
            f"line {line_no}: point {pid!r}: vector {name!r}: expected a non-empty list of numbers"
        )
    for x in xs:
        if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
            raise PointLineError(
                f"line {line_no}: point {pid!r}: vector {name!r}: {x!r} is not a finite number"
            )
    return xs


def _vector(line_no: int, pid: Any, name: str, v: Any) -> Any:
    if isinstance(v, dict):
        if set(v) != {"indices", "values"}:
            raise PointLineError(
                f"line {line_no}: point {pid!r}: sparse vector {name!r} needs exactly indices "
                "and values"
            )
        indices, values = v["indices"], v["values"]
        if not isinstance(indices, list) or not isinstance(values, list):
            raise PointLineError(
                f"line {line_no}: point {pid!r}: sparse vector {name!r}: lists expected"
            )
        if len(indices) != len(values) or any(
            isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in indices
        ):
            raise PointLineError(
                f"line {line_no}: point {pid!r}: sparse vector {name!r}: as many values as "
                "indices, indices integers >= 0"
            )
        if values:
            _numbers(line_no, pid, name, values)
        return models.SparseVector.model_construct(indices=indices, values=values)
    if isinstance(v, list) and v and isinstance(v[0], list):
        rows = [_numbers(line_no, pid, name, row) for row in v]
        if len({len(r) for r in rows}) != 1:
            raise PointLineError(
                f"line {line_no}: point {pid!r}: multi-vector {name!r}: rows of different sizes"
            )
        return rows
    return _numbers(line_no, pid, name, v)
