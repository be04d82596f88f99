"""The thin Edge adapter's translations of requests: qdrant-client models (what every request is
built as) into ``qdrant_edge`` objects, and Edge's results back into qdrant-client models.
(Collection parameters: ``edge_params.py``.)

Covered: points, filters (match value/any/except/text/phrase, ranges, empty, null, has-id,
has-vector, nested filters), Query API requests (nearest on a dense, sparse or multi-vector,
RRF and DBSF fusion, prefetch trees, filters and score thresholds in every stage). Anything
else is refused with an error naming it, never sent half-translated.
"""

from __future__ import annotations

import gc
import uuid
from collections.abc import Sequence
from datetime import date
from typing import Any, cast

import numpy as np
import qdrant_edge as qe
from qdrant_client import models

from poolq.sinks.points import SparseValues
from poolq.sinks.store.errors import EdgeError

RRF_K = 2  # Qdrant's default ranking constant: 1 / (k + rank), rank from 0


# -- points ----------------------------------------------------------------------------------


PointParts = tuple[Any, Any, Any]  # (id, named vectors, payload) of a ``models.PointStruct``


def point(p: models.PointStruct) -> qe.Point:
    return _point(p.id, p.vector, p.payload)


def points(parts: Sequence[PointParts]) -> list[qe.Point]:
    """Edge points of ``(id, vectors, payload)`` tuples, with the cyclic garbage collector
    paused: a multi-vector becomes one Python list per row (container objects), and the
    collections they trigger, scanning every live object of the process, cost as much as the
    conversion itself (nothing converted here forms a cycle)."""
    was = gc.isenabled()
    gc.disable()
    try:
        return [_point(i, v, payload) for i, v, payload in parts]
    finally:
        if was:
            gc.enable()


def _point(pid: Any, vector: Any, payload: Any) -> qe.Point:
    if not isinstance(vector, dict):
        raise EdgeError(f"point {pid}: expected named vectors, got {type(vector).__name__}")
    return qe.Point(pid, {k: _vector(v) for k, v in vector.items()}, payload)


def _vector(v: Any) -> Any:
    if isinstance(v, SparseValues):  # the writer's (numpy arrays)
        return qe.SparseVector(v.indices.tolist(), v.values.tolist())
    if isinstance(v, models.SparseVector):  # an import's (lists)
        return qe.SparseVector(list(v.indices), list(v.values))
    if isinstance(v, np.ndarray):  # lists cross into Rust faster than a 2-d array does
        return v.astype(np.float32, copy=False).tolist()
    return v


def point_id_out(x: Any) -> str | int:
    """Edge returns UUIDs as ``uuid.UUID``; the sink's ids are strings."""
    return str(x) if isinstance(x, uuid.UUID) else x


def _vectors_out(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    return {
        k: models.SparseVector(indices=list(x.indices), values=list(x.values))
        if isinstance(x, qe.SparseVector)
        else x
        for k, x in v.items()
    }


def record(r: Any) -> models.Record:
    return models.Record.model_construct(
        id=point_id_out(r.id), payload=r.payload, vector=_vectors_out(r.vector)
    )


def scored(r: Any) -> models.ScoredPoint:
    return models.ScoredPoint.model_construct(
        id=point_id_out(r.id),
        version=r.version,
        score=r.score,
        payload=r.payload,
        vector=_vectors_out(r.vector),
    )


# -- filters ---------------------------------------------------------------------------------


def filter_(f: models.Filter | None) -> qe.Filter | None:
    if f is None:
        return None
    min_should = None
    if f.min_should is not None:
        min_should = qe.MinShould(
            [_condition(c) for c in f.min_should.conditions], f.min_should.min_count
        )
    return qe.Filter(
        must=_conditions(f.must),
        should=_conditions(f.should),
        must_not=_conditions(f.must_not),
        min_should=min_should,
    )


def _conditions(cs: Any) -> list[Any] | None:
    if cs is None:
        return None
    return [_condition(c) for c in (cs if isinstance(cs, list) else [cs])]


def _condition(c: Any) -> Any:
    if isinstance(c, models.Filter):
        return filter_(c)
    if isinstance(c, models.FieldCondition):
        return _field_condition(c)
    if isinstance(c, models.IsEmptyCondition):
        return qe.IsEmptyCondition(c.is_empty.key)
    if isinstance(c, models.IsNullCondition):
        return qe.IsNullCondition(c.is_null.key)
    if isinstance(c, models.HasIdCondition):
        return qe.HasIdCondition(set(c.has_id))
    if isinstance(c, models.HasVectorCondition):
        return qe.HasVectorCondition(c.has_vector)
    if isinstance(c, models.NestedCondition):
        inner = filter_(c.nested.filter)
        assert inner is not None
        return qe.NestedCondition(c.nested.key, inner)
    raise EdgeError(f"filter condition {type(c).__name__} is not translated for Qdrant Edge")


def _field_condition(c: models.FieldCondition) -> qe.FieldCondition:
    other = [
        n for n in ("geo_bounding_box", "geo_radius", "geo_polygon", "values_count")
        if getattr(c, n) is not None
    ]  # fmt: skip
    if other:
        raise EdgeError(f"filter on {c.key!r}: {other[0]} is not translated for Qdrant Edge")
    return qe.FieldCondition(
        c.key,
        match=_match(c.key, c.match),
        range=_range(c.range),
        is_empty=c.is_empty,
        is_null=c.is_null,
    )


def _match(key: str, m: Any) -> Any:
    if m is None:
        return None
    if isinstance(m, models.MatchValue):
        # qdrant-edge-py 0.9.0 reads a Python bool as the integer 1 or 0 (bool is an int) and
        # then matches no boolean; numpy's bool is no int, so it arrives as a boolean
        value: Any = np.bool_(m.value) if isinstance(m.value, bool) else m.value
        return qe.MatchValue(value)
    if isinstance(m, models.MatchAny):
        return qe.MatchAny(cast(Any, list(m.any)))
    if isinstance(m, models.MatchExcept):
        return qe.MatchExcept(cast(Any, list(m.except_)))
    if isinstance(m, models.MatchText):
        return qe.MatchText(m.text)
    if isinstance(m, models.MatchPhrase):
        return qe.MatchPhrase(m.phrase)
    raise EdgeError(f"filter on {key!r}: {type(m).__name__} is not translated for Qdrant Edge")


def _range(r: Any) -> Any:
    if r is None:
        return None
    if isinstance(r, models.DatetimeRange):
        iso = [None if x is None else x.isoformat() if isinstance(x, date) else str(x)
               for x in (r.gte, r.gt, r.lte, r.lt)]  # fmt: skip
        return qe.RangeDateTime(gte=iso[0], gt=iso[1], lte=iso[2], lt=iso[3])
    return qe.RangeFloat(gte=r.gte, gt=r.gt, lte=r.lte, lt=r.lt)


# -- queries ---------------------------------------------------------------------------------

_REQUEST_KEYS = {
    "collection_name", "query", "using", "prefetch", "query_filter", "limit",
    "score_threshold", "with_payload", "with_vectors",
}  # fmt: skip


def query_request(kw: dict[str, Any]) -> qe.QueryRequest:
    """A ``query_points`` request (its keyword arguments) as an Edge ``QueryRequest``."""
    unknown = sorted(k for k, v in kw.items() if k not in _REQUEST_KEYS and v is not None)
    if unknown:
        raise EdgeError(f"query_points arguments {unknown} are not translated for Qdrant Edge")
    return qe.QueryRequest(
        limit=kw.get("limit") or 10,
        query=_scoring(kw.get("query"), kw.get("using")),
        prefetches=_prefetches(kw.get("prefetch")),
        filter=filter_(kw.get("query_filter")),
        score_threshold=kw.get("score_threshold"),
        with_payload=selection(kw.get("with_payload", True)),
        with_vector=selection(kw.get("with_vectors", False)),
    )


def selection(x: Any) -> bool | list[str]:
    """``with_payload`` / ``with_vectors``: a flag or a list of names."""
    if isinstance(x, bool):
        return x
    if isinstance(x, Sequence) and not isinstance(x, str):
        return [str(n) for n in x]
    raise EdgeError(f"with_payload/with_vectors {x!r}: expected a bool or a list of names")


def _prefetches(p: Any) -> list[qe.Prefetch] | None:
    if p is None:
        return None
    return [_prefetch(x) for x in (p if isinstance(p, list) else [p])]


def _prefetch(p: models.Prefetch) -> qe.Prefetch:
    if p.lookup_from is not None or p.params is not None:
        raise EdgeError("prefetch lookup_from/params are not translated for Qdrant Edge")
    return qe.Prefetch(
        limit=p.limit or 10,
        query=_scoring(p.query, p.using),
        prefetches=_prefetches(p.prefetch),
        filter=filter_(p.filter),
        score_threshold=p.score_threshold,
    )


def _scoring(q: Any, using: str | None) -> Any:
    if q is None:
        return None
    if isinstance(q, models.NearestQuery):
        q = q.nearest
    if isinstance(q, models.FusionQuery):
        if q.fusion == models.Fusion.RRF:
            return qe.Fusion.Rrf(k=RRF_K)
        return qe.Fusion.Dbsf()
    if isinstance(q, models.RrfQuery):
        return qe.Fusion.Rrf(k=q.rrf.k if q.rrf.k is not None else RRF_K, weights=q.rrf.weights)
    if isinstance(q, models.SparseVector):
        return qe.Query.Nearest(qe.SparseVector(list(q.indices), list(q.values)), using=using)
    if isinstance(q, np.ndarray):
        return qe.Query.Nearest(q.astype(np.float32).tolist(), using=using)
    if isinstance(q, list):
        return qe.Query.Nearest(q, using=using)
    raise EdgeError(f"query {type(q).__name__} is not translated for Qdrant Edge")
