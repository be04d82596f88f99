"""Answering a search: encode the query with the collection's profile (ahead of ingestion in the
engines), then run it through the writer's read path (ahead of queued writes).

Used by the worker (searches that arrive through Redis) and by ``poolq search --direct`` (a
process of its own with the models loaded and a Qdrant server URL).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from poolq.sinks.query import resolve_mode, vectors_needed
from poolq.sinks.schema import CollectionSchema
from poolq.sinks.search_types import SearchError, SearchRequest, SearchResult
from poolq.sinks.writer import QdrantWriter
from poolq.worker.runtime.vectorizer import Vectorizer


@dataclass
class QueryService:
    vectorizer: Vectorizer
    writer: QdrantWriter
    worker_id: str | None = None
    searches: int = 0
    search_errors: int = 0

    async def _exists(self, collection: str) -> bool:
        try:
            return await self.writer.exists(collection)
        except Exception:
            return True  # cannot tell: report the original error

    def schema(self, collection: str) -> CollectionSchema:
        """What the profile writes, so what a collection written with it holds."""
        return CollectionSchema(collection, tuple(self.vectorizer.vector_specs()))

    async def search(self, query: str, request: SearchRequest) -> SearchResult:
        try:
            schema = self.schema(request.collection)
            mode = resolve_mode(schema, request.mode)
            t0 = time.perf_counter()
            vectors = await self.vectorizer.encode_query(query, vectors_needed(schema, mode))
            t1 = time.perf_counter()
            hits = await self.writer.search(schema, request, vectors)
            t2 = time.perf_counter()
        except Exception as e:
            self.search_errors += 1
            # a missing collection fails differently on each backend: say it the same way
            if not isinstance(e, SearchError) and not await self._exists(request.collection):
                raise SearchError(f"collection {request.collection!r} does not exist") from None
            raise
        self.searches += 1
        return SearchResult(
            query,
            request.collection,
            mode,
            hits,
            round(t1 - t0, 4),
            round(t2 - t1, 4),
            self.worker_id,
        )
