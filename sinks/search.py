"""Searching a collection poolq wrote: modes, payload filters, Qdrant Query API requests, hits.

Modes (each a single ``query_points`` call, so fusion and rerank run inside Qdrant):

* ``dense`` / ``sparse``: nearest neighbours on one named vector;
* ``hybrid``: dense and sparse candidates prefetched, then fused (RRF by default, DBSF optional);
* ``rerank``: the hybrid candidates re-scored by MaxSim on the multi-vector (the default when the
  collection has one).

Query encoding is not done here (sinks know nothing of models): callers pass the query's vectors
by name, encoded with the collection's profile (see ``worker/query.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models

from poolq.sinks.filters import Condition, parse_conditions
from poolq.sinks.payload import CHUNK_INDEX, DOC_ID, METADATA, TEXT
from poolq.sinks.points import SparseValues, VectorValue
from poolq.sinks.schema import CollectionSchema, VectorKind, is_local, resolve_alias
from poolq.sinks.search_types import (
    FUSIONS,
    MAX_LIMIT,
    SEARCH_MODES,
    Fusion,
    Hit,
    SearchError,
    SearchMode,
    SearchRequest,
    SearchResult,
)

__all__ = [
    "FUSIONS",
    "MAX_LIMIT",
    "SEARCH_MODES",
    "Fusion",
    "Hit",
    "SearchError",
    "SearchMode",
    "SearchRequest",
    "SearchResult",
    "build_query",
    "hit_from_point",
    "maxsim",
    "maxsim_many",
    "parse_filters",
    "search_points",
]

# -- filters and hits ------------------------------------------------------------------------


def parse_filters(exprs: Sequence[str]) -> models.Filter | None:
    """The Qdrant filter of ``exprs`` in the filter language (see ``sinks/filters.py``)."""
    must: list[models.Condition] = []
    must_not: list[models.Condition] = []
    for c in parse_conditions(exprs):
        (must_not if c.negate else must).append(_field_condition(c))
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)


def _field_condition(c: Condition) -> models.FieldCondition:
    if c.kind == "range":
        return models.FieldCondition(key=c.path, range=models.Range(**dict(c.bounds)))
    assert c.value is not None  # a match condition always has its value
    return models.FieldCondition(key=c.path, match=models.MatchValue(value=c.value))


def hit_from_point(point: models.ScoredPoint) -> Hit:
    payload = point.payload or {}
    meta = payload.get(METADATA)
    return Hit(
        str(point.id),
        float(point.score),
        payload.get(DOC_ID),
        payload.get(CHUNK_INDEX),
        payload.get(TEXT),
        dict(meta) if isinstance(meta, dict) else {},
    )


# -- modes and requests ----------------------------------------------------------------------


def first_of_kind(schema: CollectionSchema, kind: VectorKind) -> str | None:
    return next((v.name for v in schema.vectors if v.kind == kind), None)


def resolve_mode(schema: CollectionSchema, mode: SearchMode | None) -> SearchMode:
    """The mode to run: ``mode`` if the collection has the vectors it needs; by default
    ``rerank`` with a multi-vector (and something to prefetch with), else ``hybrid`` with dense
    and sparse, else the one kind there is."""
    dense, sparse, multi = (first_of_kind(schema, k) for k in ("dense", "sparse", "multi"))
    if mode is None:
        if multi and (dense or sparse):
            return "rerank"
        if dense and sparse:
            return "hybrid"
        if dense:
            return "dense"
        if sparse:
            return "sparse"
        raise SearchError(f"collection {schema.name!r}: no dense or sparse vector to search")
    missing = {
        "dense": [] if dense else ["a dense vector"],
        "sparse": [] if sparse else ["a sparse vector"],
        "hybrid": [
            w for w, ok in (("a dense vector", dense), ("a sparse vector", sparse)) if not ok
        ],
        "rerank": ([] if multi else ["a multi-vector"])
        + ([] if dense or sparse else ["a dense or sparse vector"]),
    }[mode]
    if missing:
        have = ", ".join(f"{v.name} ({v.kind})" for v in schema.vectors)
        raise SearchError(
            f"mode {mode!r} needs {' and '.join(missing)}; collection {schema.name!r} has {have}"
        )
    return mode


def vectors_needed(schema: CollectionSchema, mode: SearchMode) -> list[str]:
    """Names of the query vectors a mode uses (the first vector of each kind it needs)."""
    kinds: dict[SearchMode, tuple[VectorKind, ...]] = {
        "dense": ("dense",),
        "sparse": ("sparse",),
        "hybrid": ("dense", "sparse"),
        "rerank": ("dense", "sparse", "multi"),
    }
    names = [first_of_kind(schema, k) for k in kinds[mode]]
    return [n for n in names if n is not None]


def _query_value(value: VectorValue) -> Any:
    if isinstance(value, SparseValues):
        return models.SparseVector(indices=list(value.indices), values=list(value.values))
    if isinstance(value, np.ndarray):
        return value.astype(np.float32).tolist()
    return value


def build_query(
    schema: CollectionSchema,
    request: SearchRequest,
    vectors: Mapping[str, VectorValue],
) -> dict[str, Any]:
    """Keyword arguments of ``QdrantClient.query_points`` for ``request``: one call per search,
    with the filter applied in every prefetch as well as at the top."""
    mode = resolve_mode(schema, request.mode)
    names = vectors_needed(schema, mode)
    absent = [n for n in names if n not in vectors]
    if absent:
        raise SearchError(f"mode {mode!r}: query vectors {absent} were not given")
    flt = parse_filters(request.filters)
    dense, sparse, multi = (first_of_kind(schema, k) for k in ("dense", "sparse", "multi"))
    kw: dict[str, Any] = {
        "collection_name": request.collection,
        "query_filter": flt,
        "limit": request.limit,
        "score_threshold": request.score_threshold,
        "with_payload": True,
    }
    if mode in ("dense", "sparse"):
        name = dense if mode == "dense" else sparse
        assert name is not None
        return kw | {"query": _query_value(vectors[name]), "using": name}

    def prefetch(name: str, limit: int) -> models.Prefetch:
        return models.Prefetch(
            query=_query_value(vectors[name]), using=name, filter=flt, limit=limit
        )

    fusion = models.FusionQuery(fusion=models.Fusion(request.fusion))
    if mode == "hybrid":
        lists = [prefetch(n, request.fusion_limit) for n in (dense, sparse) if n is not None]
        return kw | {"prefetch": lists, "query": fusion}
    assert multi is not None
    pool = request.rerank_pool
    firsts = [prefetch(n, pool) for n in (dense, sparse) if n is not None]
    fused: models.Prefetch | list[models.Prefetch]
    if len(firsts) == 2:  # rerank the fused candidates
        fused = models.Prefetch(prefetch=firsts, query=fusion, filter=flt, limit=pool)
    else:
        fused = firsts
    return kw | {"prefetch": fused, "query": _query_value(vectors[multi]), "using": multi}


def search_points(
    client: QdrantClient,
    schema: CollectionSchema,
    request: SearchRequest,
    vectors: Mapping[str, VectorValue],
) -> list[Hit]:
    """Run one search (in the thread that owns ``client``). On embedded Qdrant, ``rerank``
    fetches the fused candidates with their multi-vectors and scores MaxSim here, vectorised
    (the embedded engine's MaxSim loops in Python, about 100x slower); a server reranks itself.
    Both give the same scores and order."""
    kw = build_query(schema, request, vectors)
    if resolve_mode(schema, request.mode) == "rerank" and is_local(client):
        return _rerank_here(client, kw)
    response = client.query_points(**kw)
    return [hit_from_point(p) for p in response.points]


def _rerank_here(client: QdrantClient, kw: dict[str, Any]) -> list[Hit]:
    multi, query = kw["using"], np.asarray(kw["query"], dtype=np.float32)
    fused = kw["prefetch"]
    if isinstance(fused, list):  # one list to rerank: query it directly
        (only,) = fused
        source: dict[str, Any] = {"query": only.query, "using": only.using, "limit": only.limit}
    else:
        source = {"prefetch": fused.prefetch, "query": fused.query, "limit": fused.limit}
    stored = _embedded_multivectors(client, kw["collection_name"], multi)
    response = client.query_points(
        kw["collection_name"],
        query_filter=kw["query_filter"],
        with_payload=True,
        with_vectors=False if stored is not None else [multi],
        **source,
    )
    points = response.points
    if not points:
        return []
    if stored is not None:
        docs = [stored(str(p.id)) for p in points]
    else:
        docs = [np.asarray(p.vector[multi], dtype=np.float32) for p in points]  # type: ignore[index]
    scores = maxsim_many(query, docs)
    order = np.argsort(-scores, kind="stable")
    threshold = kw["score_threshold"]
    hits = []
    for i in order:
        score = float(scores[i])
        if threshold is not None and score < threshold:
            break
        p = points[int(i)]
        hits.append(hit_from_point(p.model_copy(update={"score": score, "vector": None})))
        if len(hits) == kw["limit"]:
            break
    return hits


def _embedded_multivectors(
    client: QdrantClient, collection: str, name: str
) -> Callable[[str], np.ndarray] | None:
    """Embedded Qdrant keeps each multi-vector as a numpy array; returning them through the API
    turns each into nested Python lists and back (~1.5 ms per point). Read them in place when
    this qdrant-client's embedded storage looks as expected, else None (use the API)."""
    try:
        local: Any = client._client  # QdrantLocal
        stored = local.collections[resolve_alias(client, collection)]
        arrays, index = stored.multivectors[name], stored.ids
    except (AttributeError, KeyError, TypeError):
        return None
    if not isinstance(arrays, list) or not isinstance(index, dict):
        return None
    return lambda point_id: np.asarray(arrays[index[point_id]], dtype=np.float32)


def maxsim_many(query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
    """MaxSim of one query against many documents in two matrix operations:
    ``[n_q, d] @ [sum n_doc, d].T``, then a max over each document's columns."""
    q = query / np.maximum(np.linalg.norm(query, axis=1, keepdims=True), 1e-12)
    stacked = np.concatenate(docs, axis=0)
    stacked = stacked / np.maximum(np.linalg.norm(stacked, axis=1, keepdims=True), 1e-12)
    sims = q @ stacked.T  # [n_q, sum n_doc]
    starts = np.cumsum([0] + [len(d) for d in docs[:-1]])
    return np.maximum.reduceat(sims, starts, axis=1).sum(axis=0)


def maxsim(query: np.ndarray, doc: np.ndarray) -> float:
    """Late-interaction score with cosine similarity: for each query row the best cosine over
    the document's rows, summed (what Qdrant's MAX_SIM comparator computes)."""
    query, doc = np.asarray(query, dtype=np.float64), np.asarray(doc, dtype=np.float64)
    q = query / np.maximum(np.linalg.norm(query, axis=1, keepdims=True), 1e-12)
    d = doc / np.maximum(np.linalg.norm(doc, axis=1, keepdims=True), 1e-12)
    return float((q @ d.T).max(axis=1).sum())
