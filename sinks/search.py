"""Searching a collection poolq wrote: one Query API request (``sinks/query.py``) run by the
store, whichever backend it is, and its points as hits. Fusion and the MaxSim rerank run inside
Qdrant (Edge or a server); ``sinks/maxsim.py`` is the reference the tests check them against.

Query encoding is not done here (sinks know nothing of models): callers pass the query's vectors
by name, encoded with the collection's profile (see ``worker/runtime/query.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

from qdrant_client import models

from poolq.sinks.maxsim import maxsim, maxsim_many
from poolq.sinks.payload import CHUNK_INDEX, DOC_ID, METADATA, TEXT
from poolq.sinks.points import VectorValue
from poolq.sinks.qdrant_filters import parse_filters
from poolq.sinks.query import build_query, resolve_mode, vectors_needed
from poolq.sinks.schema import CollectionSchema
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
from poolq.sinks.store.base import Store

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
    "resolve_mode",
    "search_points",
    "vectors_needed",
]


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


def search_points(
    store: Store,
    schema: CollectionSchema,
    request: SearchRequest,
    vectors: Mapping[str, VectorValue],
) -> list[Hit]:
    """Run one search (in a thread the store may be called from)."""
    return [hit_from_point(p) for p in store.query(build_query(schema, request, vectors))]
