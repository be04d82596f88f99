"""The writer: what jobs, reindexing and search ask of the store, through its owner
(``sinks/owner.py``: one task, one store thread, a read thread, retries). Points are written in
batches, durable when a call returns; stale chunks of shrunk documents are deleted after
(:meth:`QdrantWriter._delete_stale`); full rebuilds create collections with indexing deferred and build the
indexes before the switch.

The backend is whatever ``sinks/store`` opens for the URL or folder: nothing here knows which.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from operator import methodcaller
from typing import Any, TypeVar

from qdrant_client import models

from poolq.sinks.aliases import ensure_served_collection, physical_collections, point_alias
from poolq.sinks.collections import check_collection, ensure_collection
from poolq.sinks.owner import StoreOwner
from poolq.sinks.points import PointRecord, VectorValue, point_id
from poolq.sinks.qdrant_filters import documents_filter, stale_chunks_filter
from poolq.sinks.schema import CollectionSchema
from poolq.sinks.search import search_points
from poolq.sinks.store import Store
from poolq.sinks.store import store_factory as open_factory
from poolq.wire.backoff import Backoff
from poolq.wire.payload import CHUNK_COUNT
from poolq.wire.search_results import Hit, SearchRequest

log = logging.getLogger(__name__)
T = TypeVar("T")


class QdrantWriter(StoreOwner):
    """Writes points through one owner task; see the module docstring. ``store_process``: an
    embedded folder is served by a child process (``sinks/store/process.py``; the worker's
    choice: conversion and writes then run beside the worker's interpreter, not in it)."""

    def __init__(
        self,
        url: str | None = None,
        path: str | None = None,
        api_key: str | None = None,
        *,
        batch_points: int = 128,
        max_retries: int = 6,
        backoff_s: float = 0.2,
        max_backoff_s: float = 5.0,
        queue_size: int = 64,
        store_factory: Callable[[], Store] | None = None,
        store_process: bool = False,
        transport: str = "grpc",
        grpc_port: int | None = None,
        writes_in_flight: int | None = None,
        thread_start: Callable[[str], None] | None = None,
    ) -> None:
        if store_factory is not None:
            if url is not None or path is not None or api_key is not None:
                raise ValueError(
                    "QdrantWriter: pass either store_factory or url/path/api_key, not both"
                )
            factory, target = store_factory, "store_factory"
        else:
            try:
                factory, target = open_factory(
                    url,
                    path,
                    api_key,
                    process=store_process,
                    transport=transport,
                    grpc_port=grpc_port,
                    writes_in_flight=writes_in_flight,
                )
            except ValueError as e:
                raise ValueError(f"QdrantWriter: {e}") from None
        policy = Backoff(backoff_s, max_backoff_s, max_retries=max_retries)
        super().__init__(
            factory, target, queue_size=queue_size, policy=policy, thread_start=thread_start
        )
        b = batch_points
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError(f"batch_points: expected an integer >= 1, got {b!r}")
        self.batch_points = batch_points
        # metrics (retries: see StoreOwner)
        self.points_written = 0
        self.batches_written = 0
        self.write_calls = 0  # every mutating call that reached Qdrant (upsert, delete, payload)
        # called with each mutating call's seconds (retries included), on the event loop
        self.observer: Callable[[float], None] | None = None

    # -- collections -------------------------------------------------------------------------

    async def ensure_collection(
        self, schema: CollectionSchema, *, behind_alias: bool = False
    ) -> bool:
        """Create the collection or check it matches (see :func:`sinks.collections.
        ensure_collection`); ``behind_alias=True`` creates a missing one as a physical
        collection behind the alias ``schema.name`` (see :mod:`sinks.aliases`)."""
        fn = partial(ensure_served_collection if behind_alias else ensure_collection, schema=schema)
        return await self._submit(partial(self._retrying, f"ensure_collection {schema.name!r}", fn))

    async def create_for_rebuild(self, schema: CollectionSchema) -> None:
        """Create the physical collection ``schema.name`` with indexing deferred until
        :meth:`finish_build` (a full rebuild loads it first)."""

        def create(store: Store) -> None:
            if not store.create_collection(schema.name, schema, defer_indexing=True):
                check_collection(store, schema)

        await self.call(create)

    async def finish_build(self, collection: str) -> None:
        """Build the deferred indexes of a collection nothing reads yet. It runs in a thread
        of its own (it may take minutes): writes and searches of other collections go on."""
        if self._store is None or not self.running:
            raise RuntimeError(f"{self!r} is not running: call start() or use `async with`")
        await asyncio.to_thread(self._store.finish_build, collection)

    async def resolve(self, name: str) -> str:
        return await self.read(lambda s: s.resolve(name), what=f"resolve {name!r}")

    async def physical_collections(self, alias: str) -> list[str]:
        return await self.read(lambda s: physical_collections(s, alias), what="list collections")

    async def point_alias(self, alias: str, target: str) -> str | None:
        """Switch ``alias`` to ``target`` atomically; the collection it named before."""
        return await self.call(lambda s: point_alias(s, alias, target))

    async def drop_collection(self, name: str) -> None:
        log.info("dropping collection %r", name)
        await self.call(lambda s: s.delete_collection(name))

    async def exists(self, name: str) -> bool:
        return await self.read(lambda s: s.exists(name), what=f"exists {name!r}")

    # -- points ------------------------------------------------------------------------------

    async def write(
        self,
        collection: str,
        points: Sequence[PointRecord],
        *,
        replace_docs: dict[str, int] | None = None,
    ) -> int:
        """Upsert ``points`` in batches, then delete stale chunks of ``replace_docs``.

        ``replace_docs`` maps a document id to its new number of chunks; its points with a
        ``chunk_index`` at or above it are deleted. Returns the number of points once all of it
        is durable. Batches written before a failure stay written; writing again is safe, since
        point ids are deterministic.
        """
        points = list(points)
        replace = dict(replace_docs or {})
        for doc_id, n in replace.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"replace_docs[{doc_id!r}]: expected an integer >= 0, got {n!r}")
        keys = frozenset(p.id for p in points) | frozenset(("doc", d) for d in replace)
        return await self._submit(partial(self._write, collection, points, replace), keys)

    async def delete_points(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id (no payload scan; ids that do not exist are ignored)."""
        if not ids:
            return
        fn = methodcaller("delete", collection, models.PointIdsList(points=list(ids)))
        await self._submit(partial(self._mutating, f"delete of {len(ids)} points", fn))

    async def set_payload(
        self, collection: str, ids: Sequence[str], payload: dict[str, Any]
    ) -> None:
        """Overwrite the top-level ``payload`` keys of the points ``ids`` (vectors untouched)."""
        if not ids:
            return
        fn = methodcaller("set_payload", collection, list(ids), payload)
        await self._submit(partial(self._mutating, f"payload update of {len(ids)} points", fn))

    async def count(self, collection: str, doc_id: str | None = None) -> int:
        """Exact number of points, of one document if ``doc_id`` is given."""
        flt = None if doc_id is None else documents_filter([doc_id])
        return await self.read(lambda s: s.count(collection, flt), what=f"count of {collection!r}")

    async def retrieve(
        self, collection: str, ids: Iterable[str], with_vectors: bool = True
    ) -> list[models.Record]:
        """The points with these ids (those that exist), with payloads and vectors."""
        ids = list(ids)
        return await self.read(
            lambda s: s.retrieve(collection, ids, with_vectors=with_vectors),
            what=f"retrieve from {collection!r}",
        )

    async def search(
        self, schema: CollectionSchema, request: SearchRequest, vectors: Mapping[str, VectorValue]
    ) -> list[Hit]:
        """One search (a read: ahead of queued writes)."""
        fn = partial(search_points, schema=schema, request=request, vectors=vectors)
        return await self.read(fn, what=f"search of {request.collection!r}")

    async def _mutating(self, what: str, fn: Callable[[Store], T]) -> T:
        t0 = time.perf_counter()
        result = await self._retrying(what, fn)
        self.write_calls += 1
        if (observer := self.observer) is not None:
            try:
                observer(time.perf_counter() - t0)
            except Exception:  # metrics must never fail a write
                log.exception("writer observer failed")
        return result

    async def _write(
        self, collection: str, points: list[PointRecord], replace: dict[str, int]
    ) -> int:
        # in order, each acknowledged before the next: a document's chunks land in order, so
        # one whose last chunk is stored is whole (sinks/inventory.py). Writes of other
        # documents run beside this one on a store that takes several (sinks/owner.py).
        # the id of each document's first chunk past its new count -> the document id
        probes = {point_id(d, n): d for d, n in replace.items()} if replace else None
        probed: list[models.Record] | Exception | None = None
        last = max(0, len(points) - 1) // self.batch_points * self.batch_points
        for start in range(0, len(points), self.batch_points):
            batch = points[start : start + self.batch_points]
            what = f"upsert of {len(batch)} points into {collection!r}"
            # the last batch's call also probes for stale chunks once it is acknowledged: one
            # hop to the store thread less a job (a failed probe is asked again, below)
            fn: Callable[[Store], Any] = partial(_upsert, collection=collection, points=batch)
            if probes is not None and start == last:
                fn = partial(_upsert_then_probe, collection=collection, points=batch, ids=probes)
            probed = await self._mutating(what, fn)
            self.points_written += len(batch)
            self.batches_written += 1
        if probes is not None:
            await self._delete_stale(collection, replace, probes, probed)
        return len(points)

    async def _delete_stale(
        self,
        collection: str,
        replace: dict[str, int],
        probes: dict[str, str],
        found: list[models.Record] | Exception | None = None,
    ) -> None:
        """Delete chunks past each document's new count; ``found``: the probes' lookup, when the
        last upsert made it. Chunk ids are deterministic and contiguous, so one lookup by id of
        every document's first stale chunk finds the documents that shrank: its ``chunk_count``
        says which ids to delete. A probe without a usable count falls back to a filter on
        ``doc_id`` and ``chunk_index``."""
        if not isinstance(found, list):
            found = await self._retrying(
                f"lookup of stale chunks in {collection!r}",
                lambda s: s.retrieve(collection, list(probes), with_payload=True),
            )
        ids: list[str] = []
        by_filter: list[str] = []
        for rec in found:
            doc_id = probes[str(rec.id)]
            old_count = (rec.payload or {}).get(CHUNK_COUNT)
            if isinstance(old_count, int) and old_count > replace[doc_id]:
                ids += [point_id(doc_id, i) for i in range(replace[doc_id], old_count)]
            else:
                by_filter.append(doc_id)
        for doc_id in by_filter:
            selector = models.FilterSelector(filter=stale_chunks_filter(doc_id, replace[doc_id]))
            what = f"delete of stale chunks of {doc_id!r} from {collection!r}"
            await self._mutating(what, methodcaller("delete", collection, selector))
        if ids:
            what = f"delete of {len(ids)} stale chunks from {collection!r}"
            fn = methodcaller("delete", collection, models.PointIdsList(points=list(ids)))
            await self._mutating(what, fn)


def _upsert(store: Store, *, collection: str, points: list[PointRecord]) -> None:
    store.upsert_records(collection, points)
    store.maintain()


def _upsert_then_probe(
    store: Store, *, collection: str, points: list[PointRecord], ids: Mapping[str, str]
) -> list[models.Record] | Exception:
    """:func:`_upsert`, then the stale-chunk probes' lookup, or the error that lookup raised
    (the upsert stands; the caller asks again, with retries)."""
    _upsert(store, collection=collection, points=points)
    try:
        return store.retrieve(collection, list(ids), with_payload=True)
    except Exception as e:  # handed back: retried where retries are decided
        return e
