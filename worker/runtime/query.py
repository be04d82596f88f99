"""Answering a search: encode the query with the collection's profile (ahead of ingestion in the
engines), then run it through the writer's read path (ahead of queued writes), then, where the
profile names a reranker and the request does not turn it off, re-score the candidates with it
(``reranking.py``, on the query lane too).

Used by the worker (searches that arrive through Redis) and by ``poolq search --direct`` (a
process of its own with the models loaded and a Qdrant server URL).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from poolq.sinks.inventory import collection_names, first_value
from poolq.sinks.query import resolve_mode, vectors_needed
from poolq.sinks.schema import CollectionSchema
from poolq.sinks.writer import QdrantWriter
from poolq.wire.filters import Condition
from poolq.wire.search_results import SearchError, SearchRequest, SearchResult
from poolq.worker.runtime.vectorizer import Vectorizer


@dataclass
class QueryService:
    vectorizer: Vectorizer
    writer: QdrantWriter
    worker_id: str | None = None
    searches: int = 0
    search_errors: int = 0

    async def missing_collection(self, collection: str) -> SearchError | None:
        """The error for a search of a collection that does not exist (listing those that do),
        or None when it exists (or the store cannot tell: the original error is reported)."""
        try:
            if await self.writer.exists(collection):
                return None
        except Exception:
            return None
        try:
            names = await self.writer.read(collection_names, what="list of collections")
        except Exception:
            names = None
        if names is None:
            where = ""
        elif names:
            where = f"; collections: {', '.join(repr(n) for n in names)}"
        else:
            where = "; there are no collections yet (enqueue documents first)"
        return SearchError(f"collection {collection!r} does not exist{where}")

    async def stored_value(self, collection: str, condition: Condition) -> Any:
        """A value some point of ``collection`` holds at the condition's payload path (a number
        for a range), or :data:`~poolq.sinks.inventory.MISSING`. Raises the collection's
        :class:`SearchError` when it does not exist."""
        numeric = condition.kind == "range"
        try:
            return await self.writer.read(
                partial(first_value, collection=collection, path=condition.path, numeric=numeric),
                what=f"field lookup in {collection!r}",
            )
        except Exception:
            if (missing := await self.missing_collection(collection)) is not None:
                raise missing from None
            raise

    def schema(self, collection: str) -> CollectionSchema:
        """What the profile writes, so what a collection written with it holds."""
        return CollectionSchema(collection, tuple(self.vectorizer.vector_specs()))

    async def search(self, query: str, request: SearchRequest) -> SearchResult:
        reranker = self.vectorizer.reranker if request.reranker else None
        rerank_s = None
        try:
            schema = self.schema(request.collection)
            mode = resolve_mode(schema, request.mode)
            t0 = time.perf_counter()
            vectors = await self.vectorizer.encode_query(query, vectors_needed(schema, mode))
            t1 = time.perf_counter()
            asked = reranker.candidates_request(request) if reranker is not None else request
            hits = await self.writer.search(schema, asked, vectors)
            t2 = time.perf_counter()
            if reranker is not None:
                hits = await reranker.rerank(query, hits, request)
                rerank_s = round(time.perf_counter() - t2, 4)
        except Exception as e:
            self.search_errors += 1
            if not isinstance(e, SearchError) and (
                missing := await self.missing_collection(request.collection)
            ):
                raise missing from None
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
            request.group_by,
            rerank_s,
            reranker.name if reranker is not None else None,
        )
