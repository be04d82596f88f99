"""Search requests as Qdrant Query API requests: which mode runs, which query vectors it needs,
and the one ``query_points`` call (its keyword arguments, qdrant-client models) that runs it,
so that fusion and rerank happen inside Qdrant, on a server and on Qdrant Edge alike.

* ``dense`` / ``sparse``: nearest neighbours on one named vector;
* ``hybrid``: dense and sparse candidates prefetched, then fused (RRF by default, DBSF optional);
* ``rerank``: the hybrid candidates re-scored by MaxSim on the multi-vector (the default when the
  collection has one).

The filter applies in every prefetch stage as well as at the top.

A grouped request (``group_by``) is the same request run as ``query_points_groups``
(:func:`build_group_query`): one group per document, its best chunks first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from qdrant_client import models

from poolq.sinks.points import SparseValues, VectorValue
from poolq.sinks.qdrant_filters import parse_filters
from poolq.sinks.schema import CollectionSchema, VectorKind
from poolq.wire.search_results import SearchError, SearchMode, SearchRequest


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


def query_value(value: VectorValue) -> Any:
    """A query vector as the Query API takes it."""
    if isinstance(value, SparseValues):
        return models.SparseVector(indices=value.indices.tolist(), values=value.values.tolist())
    if isinstance(value, np.ndarray):
        return value.astype(np.float32).tolist()
    return value


def build_query(
    schema: CollectionSchema,
    request: SearchRequest,
    vectors: Mapping[str, VectorValue],
) -> dict[str, Any]:
    """Keyword arguments of ``QdrantClient.query_points`` for ``request`` (the one request
    every backend runs; see the module docstring)."""
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
        return kw | {"query": query_value(vectors[name]), "using": name}

    def prefetch(name: str, limit: int) -> models.Prefetch:
        return models.Prefetch(
            query=query_value(vectors[name]), using=name, filter=flt, limit=limit
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
    return kw | {"prefetch": fused, "query": query_value(vectors[multi]), "using": multi}


def build_group_query(
    schema: CollectionSchema,
    request: SearchRequest,
    vectors: Mapping[str, VectorValue],
) -> dict[str, Any]:
    """Keyword arguments of ``QdrantClient.query_points_groups`` for a grouped ``request``:
    those of :func:`build_query`, with ``limit`` counting groups, ``group_size`` hits each."""
    if request.group_by is None:
        raise SearchError("a grouped query needs group_by (None asks for chunks: build_query)")
    kw = build_query(schema, request, vectors)
    return kw | {"group_by": request.group_by, "group_size": request.group_size}
