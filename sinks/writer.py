"""The Qdrant writer: one owner task, one client thread, retries for transient failures.

An embedded (``path=``) Qdrant client is not thread-safe and locks its folder to one process, so
a single asyncio task owns the client. Every operation is queued to it (a bounded queue gives
backpressure) and runs to completion before the next one starts; the owner performs each client
call in one dedicated thread, so the event loop never blocks and only that thread touches the
client (which is also created and closed there).

Searches are the exception to the queue: :meth:`QdrantWriter.read` sends a read straight to the
client thread, so a query waits for one write batch at most, never for the queued writes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
from pydantic import ValidationError
from qdrant_client import QdrantClient, models
from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from poolq.sinks import payload as fields
from poolq.sinks.aliases import ensure_served_collection
from poolq.sinks.points import PointRecord, point_id, to_point_struct
from poolq.sinks.schema import CollectionSchema, is_local
from poolq.sinks.schema import ensure_collection as _ensure_collection

try:  # grpcio comes with qdrant-client; guarded all the same
    import grpc

    _GRPC_TRANSIENT = {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
    }
except ImportError:  # pragma: no cover
    grpc = None

log = logging.getLogger(__name__)
T = TypeVar("T")


class SinkUnavailableError(RuntimeError):
    """Qdrant kept failing with transient errors until the retries ran out."""

    def __init__(self, what: str, attempts: int, last: BaseException) -> None:
        self.attempts = attempts
        self.last_error = last
        super().__init__(
            f"Qdrant unavailable: {what} failed {attempts} times "
            f"(1 attempt + {attempts - 1} retries); last error: {describe_error(last)}"
        )


def describe_error(e: BaseException) -> str:
    """``Type: message`` of an error, unwrapping qdrant-client's ResponseHandlingException."""
    if isinstance(e, ResponseHandlingException):
        src = e.source
        return f"ResponseHandlingException({type(src).__name__}: {src})"
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def is_transient(e: BaseException) -> bool:
    """Whether retrying may help: connection problems, timeouts, 5xx and 429 responses."""
    if isinstance(e, ResponseHandlingException):
        # it wraps transport errors, and also responses this client can't parse (permanent)
        return not isinstance(e.source, ValidationError)
    if isinstance(e, UnexpectedResponse):
        return e.status_code is None or e.status_code == 429 or e.status_code >= 500
    if isinstance(e, ResourceExhaustedResponse | ConnectionError | TimeoutError):
        return True
    if isinstance(e, httpx.TransportError):
        return True
    if grpc is not None and isinstance(e, grpc.RpcError):
        code = getattr(e, "code", None)
        return callable(code) and code() in _GRPC_TRANSIENT
    return False


def stale_chunks_filter(doc_id: str, n_chunks: int) -> models.Filter:
    """Points of ``doc_id`` whose ``chunk_index`` is ``n_chunks`` or more."""
    return models.Filter(
        must=[
            models.FieldCondition(key=fields.DOC_ID, match=models.MatchValue(value=doc_id)),
            models.FieldCondition(key=fields.CHUNK_INDEX, range=models.Range(gte=n_chunks)),
        ]
    )


def documents_filter(doc_ids: Sequence[str]) -> models.Filter:
    """Points of any of ``doc_ids``."""
    return models.Filter(
        must=[models.FieldCondition(key=fields.DOC_ID, match=models.MatchAny(any=list(doc_ids)))]
    )


@dataclass
class _Job:
    run: Callable[[], Awaitable[Any]]
    future: asyncio.Future[Any]


class QdrantWriter:
    """Writes points to Qdrant through one owner task; see the module docstring."""

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
        client_factory: Callable[[], QdrantClient] | None = None,
    ) -> None:
        self._factory, self._target = _client_factory(url, path, api_key, client_factory)
        for name, value, low in [
            ("batch_points", batch_points, 1),
            ("max_retries", max_retries, 0),
            ("queue_size", queue_size, 1),
        ]:
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name}: expected an integer >= {low}, got {value!r}")
        if not 0 <= backoff_s <= max_backoff_s:
            raise ValueError(
                f"expected 0 <= backoff_s <= max_backoff_s, got {backoff_s} and {max_backoff_s}"
            )
        self.batch_points = batch_points
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.queue_size = queue_size
        # metrics
        self.points_written = 0
        self.retries = 0
        self.batches_written = 0
        self.write_calls = 0  # every mutating call that reached Qdrant (upsert, delete, payload)
        # called with each mutating call's seconds (retries included), on the event loop
        self.observer: Callable[[float], None] | None = None

        self._rng = random.Random()
        self._client: QdrantClient | None = None
        self._executor: ThreadPoolExecutor | None = None
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
        """Create the client (in the client thread) and start the owner task."""
        if self._task is not None:
            raise RuntimeError(f"{self!r} is already started")
        loop = asyncio.get_running_loop()
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="poolq-qdrant")
        try:
            self._client = await loop.run_in_executor(executor, self._factory)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        self._executor = executor
        self._queue = asyncio.Queue(self.queue_size)
        self._stopping = False
        self._task = asyncio.create_task(self._own(), name="poolq-qdrant-writer")

    async def stop(self) -> None:
        """Finish the queued work, then close the client and stop the task and thread."""
        if self._task is None:
            return
        if self._stopper is None:
            self._stopping = True  # no new work from here on
            self._stopper = asyncio.ensure_future(self._shutdown())
        # shielded: a cancelled caller (or a second stop()) does not leave the client open
        await asyncio.shield(self._stopper)

    async def _shutdown(self) -> None:
        assert self._task is not None and self._executor is not None
        try:
            while self._inflight:
                await asyncio.wait(set(self._inflight))
            self._task.cancel()  # idle now, waiting for work
            await asyncio.wait([self._task])
            # queued behind any call still running in the thread (e.g. of a cancelled caller)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._executor, _close, self._client)
        finally:
            self._executor.shutdown(wait=False)
            self._task = self._queue = self._executor = self._client = self._stopper = None

    async def __aenter__(self) -> QdrantWriter:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- operations --------------------------------------------------------------------------

    async def ensure_collection(
        self, schema: CollectionSchema, *, behind_alias: bool = False
    ) -> bool:
        """Create the collection or check it matches (see :func:`sinks.schema.ensure_collection`);
        ``behind_alias=True`` creates a missing one as a physical collection behind the alias
        ``schema.name`` (see :mod:`sinks.aliases`)."""
        fn = partial(
            ensure_served_collection if behind_alias else _ensure_collection, schema=schema
        )
        return await self._submit(partial(self._retrying, f"ensure_collection {schema.name!r}", fn))

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
        is durable (``wait=True``). Batches written before a failure stay written; writing again
        is safe, since point ids are deterministic.
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
        fn = partial(_count, collection=collection, flt=flt)
        return await self._submit(partial(self._retrying, f"count of {collection!r}", fn))

    async def retrieve(
        self, collection: str, ids: Iterable[str], with_vectors: bool = True
    ) -> list[models.Record]:
        """The points with these ids (those that exist), with payloads and vectors."""
        fn = partial(_retrieve, collection=collection, ids=list(ids), with_vectors=with_vectors)
        return await self._submit(partial(self._retrying, f"retrieve from {collection!r}", fn))

    async def call(self, fn: Callable[[QdrantClient], T], *, retry: bool = False) -> T:
        """Run ``fn(client)`` in the client thread; ``retry=True`` retries transient errors
        (only for idempotent functions)."""
        if retry:
            return await self._submit(partial(self._retrying, getattr(fn, "__name__", "call"), fn))
        return await self._submit(partial(self._run, fn))

    async def read(self, fn: Callable[[QdrantClient], T], *, what: str = "read") -> T:
        """Run a read-only ``fn(client)`` (a search) ahead of queued writes: it goes straight to
        the client thread, where it waits for at most the one operation already running there
        (writes are cut into batches of ``batch_points``). Transient errors are retried."""
        if self._task is None or self._stopping or self._task.done():
            raise RuntimeError(f"{self!r} is not running: call start() or use `async with`")
        return await self._retrying(what, fn)

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

    async def _run(self, fn: Callable[[QdrantClient], T]) -> T:
        """Run ``fn(client)`` in the client thread (the owner, and :meth:`read`, call it)."""
        assert self._executor is not None and self._client is not None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, self._client)

    async def _retrying(self, what: str, fn: Callable[[QdrantClient], T]) -> T:
        attempt = 0
        while True:
            try:
                return await self._run(fn)
            except Exception as e:
                if not is_transient(e):
                    raise
                if attempt >= self.max_retries:
                    raise SinkUnavailableError(what, attempt + 1, e) from e
                delay = self._backoff(attempt, e)
                attempt += 1
                self.retries += 1
                log.warning(
                    "qdrant %s failed (attempt %d of %d), retrying in %.2fs: %s",
                    what,
                    attempt,
                    self.max_retries + 1,
                    delay,
                    describe_error(e),
                )
                await asyncio.sleep(delay)

    async def _mutating(self, what: str, fn: Callable[[QdrantClient], T]) -> T:
        t0 = time.perf_counter()
        result = await self._retrying(what, fn)
        self.write_calls += 1
        if (observer := self.observer) is not None:
            try:
                observer(time.perf_counter() - t0)
            except Exception:  # metrics must never fail a write
                log.exception("writer observer failed")
        return result

    def _backoff(self, attempt: int, e: BaseException) -> float:
        """Exponential backoff with full jitter; at least what a 429's Retry-After asks."""
        delay = self._rng.uniform(0, min(self.max_backoff_s, self.backoff_s * 2**attempt))
        if isinstance(e, ResourceExhaustedResponse):
            delay = max(delay, float(e.retry_after_s))
        return delay

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
        """Delete chunks past each document's new count. Chunk ids are deterministic and
        contiguous, so one lookup by id of every document's first stale chunk finds the documents
        that shrank (its ``chunk_count`` says how many chunks they had): no payload scan per
        document, which embedded Qdrant would do in Python over the whole collection."""
        probe = {point_id(doc_id, n): doc_id for doc_id, n in replace.items()}
        fn = partial(_retrieve, collection=collection, ids=list(probe), with_vectors=False)
        found = await self._retrying(f"lookup of stale chunks in {collection!r}", fn)
        stale_ids: list[str] = []
        for rec in found:
            doc_id = probe[str(rec.id)]
            old_count = (rec.payload or {}).get(fields.CHUNK_COUNT)
            if isinstance(old_count, int) and old_count > replace[doc_id]:
                stale_ids += [point_id(doc_id, i) for i in range(replace[doc_id], old_count)]
            else:  # no usable count: fall back to the filter
                selector = models.FilterSelector(
                    filter=stale_chunks_filter(doc_id, replace[doc_id])
                )
                what = f"delete of stale chunks of {doc_id!r} from {collection!r}"
                await self._mutating(
                    what, partial(_delete, collection=collection, selector=selector)
                )
        if stale_ids:
            ids_selector = models.PointIdsList(points=list(stale_ids))
            what = f"delete of {len(stale_ids)} stale chunks from {collection!r}"
            await self._mutating(
                what, partial(_delete, collection=collection, selector=ids_selector)
            )


# client calls, as functions of the client (partials of these run in the client thread)


def _close(client: QdrantClient | None) -> None:
    if client is not None:
        client.close()


def _convert(batch: list[PointRecord], client: QdrantClient) -> list[models.PointStruct]:
    arrays_ok = is_local(client)
    return [to_point_struct(r, arrays_ok=arrays_ok) for r in batch]


def _upsert(client: QdrantClient, *, collection: str, points: list[models.PointStruct]) -> None:
    client.upsert(collection, points=points, wait=True)


def _delete(
    client: QdrantClient, *, collection: str, selector: models.FilterSelector | models.PointIdsList
) -> None:
    client.delete(collection, points_selector=selector, wait=True)


def _set_payload(
    client: QdrantClient, *, collection: str, ids: list[str], payload: dict[str, Any]
) -> None:
    client.set_payload(
        collection, payload=payload, points=models.PointIdsList(points=list(ids)), wait=True
    )


def _count(client: QdrantClient, *, collection: str, flt: models.Filter | None) -> int:
    return client.count(collection, count_filter=flt, exact=True).count


def _retrieve(
    client: QdrantClient, *, collection: str, ids: list[str], with_vectors: bool
) -> list[models.Record]:
    return client.retrieve(collection, ids=ids, with_payload=True, with_vectors=with_vectors)


def _client_factory(
    url: str | None,
    path: str | None,
    api_key: str | None,
    factory: Callable[[], QdrantClient] | None,
) -> tuple[Callable[[], QdrantClient], str]:
    """The function that creates the client, and a description of it without secrets."""
    if factory is not None:
        if url is not None or path is not None or api_key is not None:
            raise ValueError(
                "QdrantWriter: pass either client_factory or url/path/api_key, not both"
            )
        return factory, "client_factory"
    if (url is None) == (path is None):
        raise ValueError(
            "QdrantWriter needs exactly one of url= (a Qdrant server) or path= (an embedded "
            f"local folder), got {'both' if url is not None else 'neither'}"
        )
    if path is not None:
        if api_key is not None:
            raise ValueError("QdrantWriter: api_key is for a Qdrant server url, not a local path")
        if path == ":memory:":
            return partial(QdrantClient, location=":memory:"), "location=':memory:'"
        return partial(QdrantClient, path=path), f"path={path!r}"
    assert url is not None
    parts = urlsplit(url)
    shown = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")

    def make() -> QdrantClient:  # a closure: unlike a partial, its repr shows no api key
        return QdrantClient(url=url, api_key=api_key)

    return make, f"url={shown!r}"
