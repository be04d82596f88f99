"""Searching a collection poolq wrote: one Query API request (``sinks/query.py``) run by the
store, whichever backend it is, and its points as hits. Fusion and the MaxSim rerank run inside
Qdrant (Edge or a server); the tests check them against a reference (``tests/support/maxsim.py``).

A grouped request (``group_by``) runs as ``query_points_groups`` (the store's
:meth:`~poolq.sinks.store.interface.Store.query_groups`): each hit is a document's best chunk, with
the document's other matching chunks in :attr:`Hit.chunks`.

Query encoding is not done here (sinks know nothing of models): callers pass the query's vectors
by name, encoded with the collection's profile (see ``worker/runtime/query.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from qdrant_client import models

from poolq.sinks.points import VectorValue
from poolq.sinks.query import build_group_query, build_query
from poolq.sinks.schema import CollectionSchema
from poolq.sinks.store.interface import Store
from poolq.wire.payload import CHUNK_INDEX, DOC_ID, METADATA, TEXT
from poolq.wire.search_results import ChunkMatch, Citation, Hit, SearchRequest


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
        citation=Citation.from_dict(payload),
    )


def hit_from_group(group: models.PointGroup) -> Hit:
    """A document's hit: its best chunk, and its other chunks (best first) in ``chunks``."""
    best, *others = group.hits
    hit = hit_from_point(best)
    chunks = [
        ChunkMatch(str(p.id), float(p.score), (p.payload or {}).get(CHUNK_INDEX),
              (p.payload or {}).get(TEXT), Citation.from_dict(p.payload))
        for p in others
    ]  # fmt: skip
    return replace(hit, chunks=chunks)


def search_points(
    store: Store,
    schema: CollectionSchema,
    request: SearchRequest,
    vectors: Mapping[str, VectorValue],
) -> list[Hit]:
    """Run one search (in a thread the store may be called from): chunks, or with
    ``request.group_by`` one hit per document."""
    if request.group_by is not None:
        groups = store.query_groups(build_group_query(schema, request, vectors))
        return [hit_from_group(g) for g in groups if g.hits]
    return [hit_from_point(p) for p in store.query(build_query(schema, request, vectors))]
