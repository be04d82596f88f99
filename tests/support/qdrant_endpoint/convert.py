"""Requests (gRPC messages) as what the store takes: qdrant-client models and ``query_points``
keyword arguments; the store's answers back as messages. The work is done by qdrant-client's
own converters (``GrpcToRest`` / ``RestToGrpc``); what is added here is what a server does on
top of them:

* empty condition lists in a filter mean "no condition" (a gRPC ``Filter`` always has its three
  lists; Qdrant reads an empty one as absent, and so does Edge 0.9: made explicit here);
* a collection's one unnamed vector is the vector named ``""`` in Edge;
* payload selectors Edge does not take (``exclude``), and the field a grouped query groups by,
  are asked for whole and trimmed here (top-level keys);
* search parameters (``hnsw_ef``, ``exact``, quantization rescoring) are dropped: Edge 0.9 runs
  every search with its own; ``lookup_from`` and MMR are refused.

Points are built with ``model_construct`` (no pydantic validation of every float): Edge checks
the vectors against the collection and its errors come back as INVALID_ARGUMENT.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from qdrant_client import grpc, models
from qdrant_client.conversions.conversion import GrpcToRest as G
from qdrant_client.conversions.conversion import RestToGrpc as R

from poolq.sinks.store import edge_convert as cv
from tests.support.qdrant_endpoint.status import unsupported

UNNAMED = ""  # Edge's name for the vector of a collection created with one unnamed vector
DEFAULT_LIMIT = 10  # Qdrant's, for query, scroll and groups
DEFAULT_GROUP_SIZE = 3


# -- points and filters ----------------------------------------------------------------------


def point_id(pid: grpc.PointId) -> str | int:
    found = G.convert_point_id(pid)
    return found if isinstance(found, int) else str(found)


def points(msgs: Iterable[grpc.PointStruct]) -> list[models.PointStruct]:
    """Points to upsert; a lone unnamed vector becomes the vector ``""``."""
    out = []
    for m in msgs:
        vector = G.convert_vectors(m.vectors) if m.HasField("vectors") else {}
        if not isinstance(vector, dict):
            vector = {UNNAMED: vector}
        for name, v in vector.items():
            if not isinstance(v, list | models.SparseVector):
                raise unsupported(f"vector {name!r}: {type(v).__name__} (server-side inference)")
        payload = G.convert_payload(m.payload)
        out.append(
            models.PointStruct.model_construct(id=point_id(m.id), vector=vector, payload=payload)
        )
    return out


def filter_(msg: grpc.Filter | None) -> models.Filter | None:
    """A gRPC filter (None: none given) as a model, empty condition lists as absent."""
    return None if msg is None else clean_filter(G.convert_filter(msg))


def clean_filter(f: models.Filter) -> models.Filter:
    def conditions(cs: Any) -> Any:
        if cs is None or cs == []:
            return None
        return [_clean_condition(c) for c in (cs if isinstance(cs, list) else [cs])]

    min_should = f.min_should
    if min_should is not None:
        min_should = models.MinShould(
            conditions=conditions(min_should.conditions) or [], min_count=min_should.min_count
        )
    return models.Filter.model_construct(
        must=conditions(f.must),
        should=conditions(f.should),
        must_not=conditions(f.must_not),
        min_should=min_should,
    )


def _clean_condition(c: Any) -> Any:
    if isinstance(c, models.Filter):
        return clean_filter(c)
    if isinstance(c, models.NestedCondition):
        nested = models.Nested(key=c.nested.key, filter=clean_filter(c.nested.filter))
        return models.NestedCondition(nested=nested)
    return c


def selector(msg: grpc.PointsSelector) -> models.PointIdsList | models.FilterSelector:
    found = G.convert_points_selector(msg)
    if isinstance(found, models.FilterSelector):
        return models.FilterSelector(filter=clean_filter(found.filter))
    return models.PointIdsList(points=list(found.points))


# -- what comes back -------------------------------------------------------------------------


@dataclass(frozen=True)
class PayloadShape:
    """What to ask Edge for (``ask``), and how to trim what it returns."""

    ask: bool | list[str]
    none: bool = False  # the caller wants no payload (asked only for the field grouped by)
    drop: tuple[str, ...] = ()  # top-level keys to remove

    def apply(self, payload: dict[str, Any] | None) -> dict[str, Any] | None:
        if self.none:
            return None
        if self.drop and payload:
            return {k: v for k, v in payload.items() if k not in self.drop}
        return payload


def payload_shape(
    msg: grpc.WithPayloadSelector | None, default: bool, need: str | None = None
) -> PayloadShape:
    """The payload selector of a request (None: not given, ``default``); ``need``: a field
    that must come back (a grouped query's key) even if the caller did not ask for it."""
    value = default if msg is None else G.convert_with_payload_selector(msg)
    ask: bool | list[str]
    drop: tuple[str, ...] = ()
    if isinstance(value, models.PayloadSelectorExclude):
        ask, drop = True, tuple(value.exclude)
    elif isinstance(value, models.PayloadSelectorInclude):
        ask = list(value.include)
    else:
        ask = value if isinstance(value, bool) else list(value)
    if need is not None and ask is False:
        return PayloadShape([need], none=True)
    if need is not None and isinstance(ask, list) and need not in ask:
        return PayloadShape([*ask, need], drop=(*drop, need))
    return PayloadShape(ask, drop=drop)


def vectors_selection(msg: grpc.WithVectorsSelector | None) -> bool | list[str]:
    if msg is None:
        return False
    value = G.convert_with_vectors_selector(msg)
    return value if isinstance(value, bool) else list(value)


def record(r: models.Record, shape: PayloadShape) -> grpc.RetrievedPoint:
    payload = shape.apply(r.payload) or {}
    return R.convert_record(
        models.Record.model_construct(id=r.id, payload=payload, vector=r.vector)
    )


def scored(p: models.ScoredPoint, shape: PayloadShape) -> grpc.ScoredPoint:
    p.payload = shape.apply(p.payload)
    return R.convert_scored_point(p)


def group(g: models.PointGroup, shape: PayloadShape) -> grpc.PointGroup:
    hits = [scored(p, shape) for p in g.hits]
    return grpc.PointGroup(id=R.convert_group_id(g.id), hits=hits)


def next_offset(x: Any) -> grpc.PointId | None:
    return None if x is None else R.convert_extended_point_id(cv.point_id_out(x))


# -- queries ---------------------------------------------------------------------------------


def query(
    msg: grpc.QueryPoints | grpc.QueryPointGroups, need: str | None = None
) -> tuple[dict[str, Any], PayloadShape]:
    """A ``QueryPoints`` / ``QueryPointGroups`` message as ``query_points`` keyword arguments
    (without ``offset``, ``group_by``, ``group_size``), and how to shape the payloads."""
    if msg.HasField("lookup_from"):
        raise unsupported("lookup_from")
    if msg.HasField("shard_key_selector"):
        raise unsupported("shard_key_selector")
    shape = payload_shape(msg.with_payload if msg.HasField("with_payload") else None, False, need)
    kw: dict[str, Any] = {
        "collection_name": msg.collection_name,
        "query": _query(G.convert_query(msg.query)) if msg.HasField("query") else None,
        "using": msg.using if msg.HasField("using") else None,
        "prefetch": [_prefetch(G.convert_prefetch_query(p)) for p in msg.prefetch] or None,
        "query_filter": filter_(msg.filter) if msg.HasField("filter") else None,
        "score_threshold": msg.score_threshold if msg.HasField("score_threshold") else None,
        "limit": msg.limit if msg.HasField("limit") else DEFAULT_LIMIT,
        "with_payload": shape.ask,
        "with_vectors": vectors_selection(
            msg.with_vectors if msg.HasField("with_vectors") else None
        ),
    }
    return kw, shape


def _query(q: Any) -> Any:
    if isinstance(q, models.NearestQuery) and q.mmr is not None:
        raise unsupported("nearest with MMR")
    return q


def _prefetch(p: models.Prefetch) -> models.Prefetch:
    if p.lookup_from is not None:
        raise unsupported("prefetch lookup_from")
    inner = p.prefetch if isinstance(p.prefetch, list) or p.prefetch is None else [p.prefetch]
    return p.model_copy(
        update={
            "query": _query(p.query),
            "params": None,
            "filter": None if p.filter is None else clean_filter(p.filter),
            "prefetch": [_prefetch(x) for x in inner] if inner else None,
        }
    )
