"""The writer: one owner task in front of the store, one thread for it, retries of transient
failures.

A single asyncio task owns the store: every write is queued to it (a bounded queue gives
backpressure) and runs to completion before the next one starts, in one dedicated thread, so
the event loop never blocks and writes never interleave. The store is created and closed in
that thread too.

Reads (searches, the inventory) skip the queue: :meth:`QdrantWriter.read` runs them in a read
thread of their own when the store serves reads concurrently (Qdrant Edge), else straight in
the store thread, where they wait for one write batch at most, never for the queued writes.

The backend is whatever ``sinks/store`` opens for the URL or folder: nothing here knows which.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from qdrant_client import models

from poolq.sinks.aliases import ensure_served_collection, physical_collections, point_alias
from poolq.sinks.collections import check_collection, ensure_collection
from poolq.sinks.points import PointRecord, VectorValue, to_point_struct
from poolq.sinks.qdrant_filters import documents_filter, stale_chunks_filter
from poolq.sinks.retry import RetryPolicy, retrying
from poolq.sinks.schema import CollectionSchema
from poolq.sinks.search import search_points
from poolq.sinks.search_types import Hit, SearchRequest
from poolq.sinks.stale import stale_ids, stale_probes
from poolq.sinks.store import Store, store_factory

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class _Job:
    run: Callable[[], Awaitable[Any]]
    future: asyncio.Future[Any]


class QdrantWriter:
    """Writes points through one owner task; see the module docstring."""

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
    ) -> None:
        if store_factory is not None:
            if url is not None or path is not None or api_key is not None:
                raise ValueError(
                    "QdrantWriter: pass either store_factory or url/path/api_key, not both"
                )
            self._factory, self._target = store_factory, "store_factory"
        else:
            self._factory, self._target = _factory(url, path, api_key)
        for name, value, low in [("batch_points", batch_points, 1), ("queue_size", queue_size, 1)]:
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
        self.policy = RetryPolicy(max_retries, backoff_s, max_backoff_s)
        self.batch_points = batch_points
        self.queue_size = queue_size
        # metrics
        self.points_written = 0
        self.retries = 0
        self.batches_written = 0
        self.write_calls = 0  # every mutating call that reached Qdrant (upsert, delete, payload)
        # called with each mutating call's seconds (retries included), on the event loop
        self.observer: Callable[[float], None] | None = None

        self._store: Store | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._reader: ThreadPoolExecutor | None = None
        self._queue: asyncio.Queue[_Job] | None = None
        self._task: asyncio.Task[None] | None = None
        self._inflight: set[asyncio.Future[Any]] = set()
        self._stopping = False
        self._stopper: asyncio.Future[None] | None = None

    def __repr__(self) -> str:  # never shows the api key
        return f"QdrantWriter({self._target})"

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._task is not None and not self._stopping

    async def start(self) -> None:
        """Open the store (in the store thread) and start the owner task."""
        if self._task is not None:
            raise RuntimeError(f"{self!r} is already started")
        loop = asyncio.get_running_loop()
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="poolq-store")
        try:
            self._store = await loop.run_in_executor(executor, self._factory)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        self._executor = executor
        if self._store.concurrent_reads:
            self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="poolq-read")
        self._queue = asyncio.Queue(self.queue_size)
        self._stopping = False
        self._task = asyncio.create_task(self._own(), name="poolq-qdrant-writer")

    async def stop(self) -> None:
        """Finish the queued work, then close the store and stop the task and threads."""
        if self._task is None:
            return
        if self._stopper is None:
            self._stopping = True  # no new work from here on
            self._stopper = asyncio.ensure_future(self._shutdown())
        # shielded: a cancelled caller (or a second stop()) does not leave the store open
        await asyncio.shield(self._stopper)

    async def _shutdown(self) -> None:
        assert self._task is not None and self._executor is not None
        try:
            while self._inflight:
                await asyncio.wait(set(self._inflight))
            self._task.cancel()  # idle now, waiting for work
            await asyncio.wait([self._task])
            loop = asyncio.get_running_loop()
            if self._reader is not None:  # reads still running finish first
                await loop.run_in_executor(self._reader, lambda: None)
            # queued behind any call still running in the thread (e.g. of a cancelled caller)
            await loop.run_in_executor(self._executor, _close, self._store)
        finally:
            self._executor.shutdown(wait=False)
            if self._reader is not None:
                self._reader.shutdown(wait=False)
            self._task = self._queue = self._executor = self._reader = None
            self._store = self._stopper = None

    async def __aenter__(self) -> QdrantWriter:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

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
        return await self._submit(partial(self._write, collection, points, replace))

    async def delete_documents(self, collection: str, doc_ids: Sequence[str]) -> None:
        """Delete every point of ``doc_ids``."""
        if not doc_ids:
            return
        selector = models.FilterSelector(filter=documents_filter(doc_ids))
        fn = partial(_delete, collection=collection, selector=selector)
        what = f"delete of {len(doc_ids)} documents from {collection!r}"
        await self._submit(partial(self._mutating, what, fn))

    async def delete_points(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id (no payload scan; ids that do not exist are ignored)."""
        if not ids:
            return
        selector = models.PointIdsList(points=list(ids))
        fn = partial(_delete, collection=collection, selector=selector)
        await self._submit(partial(self._mutating, f"delete of {len(ids)} points", fn))

    async def set_payload(
        self, collection: str, ids: Sequence[str], payload: dict[str, Any]
    ) -> None:
        """Overwrite the top-level ``payload`` keys of the points ``ids`` (vectors untouched)."""
        if not ids:
            return
        fn = partial(_set_payload, collection=collection, ids=list(ids), payload=payload)
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

    # -- running functions of the store ------------------------------------------------------

    async def call(self, fn: Callable[[Store], T], *, retry: bool = False) -> T:
        """Run ``fn(store)`` in the store thread, after the queued writes; ``retry=True``
        retries transient errors (only for idempotent functions)."""
        if retry:
            return await self._submit(partial(self._retrying, getattr(fn, "__name__", "call"), fn))
        return await self._submit(partial(self._run, fn))

    async def read(self, fn: Callable[[Store], T], *, what: str = "read") -> T:
        """Run a read-only ``fn(store)`` ahead of queued writes (see the module docstring).
        Transient errors are retried."""
        if self._task is None or self._stopping or self._task.done():
            raise RuntimeError(f"{self!r} is not running: call start() or use `async with`")
        return await self._retrying(what, fn, reader=True)

    # -- the owner ---------------------------------------------------------------------------

    async def _submit(self, run: Callable[[], Awaitable[T]]) -> T:
        if self._task is None or self._queue is None or self._stopping or self._task.done():
            raise RuntimeError(f"{self!r} is not running: call start() or use `async with`")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._inflight.add(future)
        future.add_done_callback(self._inflight.discard)
        try:
            await self._queue.put(_Job(run, future))  # waits while the queue is full
        except BaseException:  # cancelled while waiting: stop() must not wait for it
            future.cancel()
            raise
        return await future

    async def _own(self) -> None:
        queue = self._queue
        assert queue is not None
        try:
            while True:
                job = await queue.get()
                if job.future.done():  # its caller gave up while it waited
                    continue
                try:
                    result = await job.run()
                except Exception as e:
                    if not job.future.done():
                        job.future.set_exception(e)
                else:
                    if not job.future.done():
                        job.future.set_result(result)
        finally:  # only cancellation ends the owner; fail whatever is still queued
            while not queue.empty():
                job = queue.get_nowait()
                if not job.future.done():
                    job.future.set_exception(RuntimeError(f"{self!r} stopped"))

    async def _run(self, fn: Callable[[Store], T], reader: bool = False) -> T:
        """Run ``fn(store)`` in the store thread (or the read thread)."""
        assert self._executor is not None and self._store is not None
        executor = self._reader if reader and self._reader is not None else self._executor
        return await asyncio.get_running_loop().run_in_executor(executor, fn, self._store)

    async def _retrying(self, what: str, fn: Callable[[Store], T], reader: bool = False) -> T:
        def counted() -> None:
            self.retries += 1

        return await retrying(what, lambda: self._run(fn, reader), self.policy, counted)

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
        for start in range(0, len(points), self.batch_points):
            batch = points[start : start + self.batch_points]
            structs = await self._run(partial(_convert, batch))
            what = f"upsert of {len(batch)} points into {collection!r}"
            await self._mutating(what, partial(_upsert, collection=collection, points=structs))
            self.points_written += len(batch)
            self.batches_written += 1
        if replace:
            await self._delete_stale(collection, replace)
        return len(points)

    async def _delete_stale(self, collection: str, replace: dict[str, int]) -> None:
        """Delete chunks past each document's new count (see ``sinks/stale.py``)."""
        probes = stale_probes(replace)
        found = await self._retrying(
            f"lookup of stale chunks in {collection!r}",
            lambda s: s.retrieve(collection, list(probes), with_payload=True),
        )
        ids, by_filter = stale_ids(found, probes, replace)
        for doc_id in by_filter:
            selector = models.FilterSelector(filter=stale_chunks_filter(doc_id, replace[doc_id]))
            what = f"delete of stale chunks of {doc_id!r} from {collection!r}"
            await self._mutating(what, partial(_delete, collection=collection, selector=selector))
        if ids:
            selector_ids = models.PointIdsList(points=list(ids))
            what = f"delete of {len(ids)} stale chunks from {collection!r}"
            await self._mutating(
                what, partial(_delete, collection=collection, selector=selector_ids)
            )


# store calls, as functions of the store (partials of these run in the store thread)


def _factory(
    url: str | None, path: str | None, api_key: str | None
) -> tuple[Callable[[], Store], str]:
    try:
        return store_factory(url, path, api_key)
    except ValueError as e:
        raise ValueError(f"QdrantWriter: {e}") from None


def _close(store: Store | None) -> None:
    if store is not None:
        store.close()


def _convert(batch: list[PointRecord], store: Store) -> list[models.PointStruct]:
    return [to_point_struct(r, arrays_ok=store.accepts_arrays) for r in batch]


def _upsert(store: Store, *, collection: str, points: list[models.PointStruct]) -> None:
    store.upsert(collection, points)
    store.maintain()


def _delete(
    store: Store, *, collection: str, selector: models.FilterSelector | models.PointIdsList
) -> None:
    store.delete(collection, selector)


def _set_payload(store: Store, *, collection: str, ids: list[str], payload: dict[str, Any]) -> None:
    store.set_payload(collection, ids, payload)
