"""The owner of a store: one asyncio task in front of it, one thread for it, a read thread.

A single task owns the store: every write is queued to it (a bounded queue gives backpressure)
and runs in the store's thread, so the event loop never blocks. A store that takes several
upserts at once (a server: ``Store.write_concurrency``) gets that many threads, and writes of
points run side by side up to that bound, except where two touch the same document or point
(their ``keys`` meet): then the later one waits for the earlier, so a document's writes land in
the order they were queued. Every other call (deletes, payload updates, collections, aliases)
waits for the writes before it and runs alone. With one thread (the embedded store) every call
runs to completion before the next starts, in order. The store is opened and closed there too.

Reads (searches, the inventory) skip the queue: :meth:`StoreOwner.read` runs them in a read
thread of their own when the store serves reads concurrently (Qdrant Edge), else straight in
the store thread, where they wait for one write batch at most, never for the queued writes.
Transient failures are retried (:class:`~poolq.wire.backoff.Backoff`: exponential backoff with
full jitter, at least what a server's 429 asks for), with a clear error once the retries run out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from poolq.sinks.store import Store
from poolq.sinks.store.errors import (
    SinkUnavailableError,
    describe_error,
    is_transient,
    retry_after_s,
)
from poolq.wire.backoff import Backoff, RetriesSpent

log = logging.getLogger("poolq.sinks.writer")
T = TypeVar("T")


@dataclass
class _Job:
    run: Callable[[], Awaitable[Any]]
    future: asyncio.Future[Any]
    keys: frozenset[Any] | None = None  # what a write touches; None: runs alone


class StoreOwner:
    """See the module docstring; :class:`~poolq.sinks.writer.QdrantWriter` adds the
    operations."""

    def __init__(
        self,
        factory: Callable[[], Store],
        target: str,
        *,
        queue_size: int,
        policy: Backoff,
        thread_start: Callable[[str], None] | None = None,
    ) -> None:
        """``thread_start(name)`` runs first in each of the owner's threads (``poolq-store``,
        ``poolq-read``): the worker names them for the OS there."""
        if isinstance(queue_size, bool) or not isinstance(queue_size, int) or queue_size < 1:
            raise ValueError(f"queue_size: expected an integer >= 1, got {queue_size!r}")
        self._factory, self._target = factory, target
        self.queue_size = queue_size
        self.policy = policy
        self.retries = 0
        self._store: Store | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._reader: ThreadPoolExecutor | None = None
        self._queue: asyncio.Queue[_Job] | None = None
        self._task: asyncio.Task[None] | None = None
        self._inflight: set[asyncio.Future[Any]] = set()
        self._stopping = False
        self._stopper: asyncio.Future[None] | None = None
        self.write_concurrency = 1  # the store's, once it is open
        self._thread_start = thread_start

    def __repr__(self) -> str:  # never shows the api key
        return f"{type(self).__name__}({self._target})"

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._task is not None and not self._stopping

    async def start(self) -> None:
        """Open the store (in the store thread) and start the owner task."""
        if self._task is not None:
            raise RuntimeError(f"{self!r} is already started")
        loop = asyncio.get_running_loop()
        executor = self._pool(1, "poolq-store")
        try:
            self._store = await loop.run_in_executor(executor, self._factory)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        self.write_concurrency = max(1, int(self._store.write_concurrency))
        if self.write_concurrency > 1:  # a thread per write in flight
            executor.shutdown(wait=False)
            executor = self._pool(self.write_concurrency, "poolq-store")
        self._executor = executor
        if self._store.concurrent_reads:
            self._reader = self._pool(1, "poolq-read")
        self._queue = asyncio.Queue(self.queue_size)
        self._stopping = False
        self._task = asyncio.create_task(self._own(), name="poolq-qdrant-writer")

    def _pool(self, threads: int, name: str) -> ThreadPoolExecutor:
        start = self._thread_start
        if start is None:
            return ThreadPoolExecutor(threads, thread_name_prefix=name)
        return ThreadPoolExecutor(
            threads, thread_name_prefix=name, initializer=start, initargs=(name,)
        )

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
            if self.write_concurrency > 1:  # calls still running in its threads finish first
                await asyncio.to_thread(self._executor.shutdown, True)
                await asyncio.to_thread(_close, self._store)
            else:  # queued behind any call still running in the thread (a cancelled caller's)
                await loop.run_in_executor(self._executor, _close, self._store)
        finally:
            self._executor.shutdown(wait=False)
            if self._reader is not None:
                self._reader.shutdown(wait=False)
            self._task = self._queue = self._executor = self._reader = None
            self._store = self._stopper = None

    async def __aenter__(self) -> Any:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- running functions of the store ------------------------------------------------------

    async def call(self, fn: Callable[[Store], T]) -> T:
        """Run ``fn(store)`` in the store thread, after the queued writes (no retries)."""
        return await self._submit(partial(self._run, fn))

    async def read(self, fn: Callable[[Store], T], *, what: str = "read") -> T:
        """Run a read-only ``fn(store)`` ahead of queued writes (see the module docstring).
        Transient errors are retried."""
        if self._task is None or self._stopping or self._task.done():
            raise RuntimeError(f"{self!r} is not running: call start() or use `async with`")
        return await self._retrying(what, fn, reader=True)

    # -- the owner ---------------------------------------------------------------------------

    async def _submit(
        self, run: Callable[[], Awaitable[T]], keys: frozenset[Any] | None = None
    ) -> T:
        """Queue ``run``; ``keys``: what it writes, for a write that may overlap others whose
        keys it does not share (None: it runs alone)."""
        if self._task is None or self._queue is None or self._stopping or self._task.done():
            raise RuntimeError(f"{self!r} is not running: call start() or use `async with`")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._inflight.add(future)
        future.add_done_callback(self._inflight.discard)
        try:
            await self._queue.put(_Job(run, future, keys))  # waits while the queue is full
        except BaseException:  # cancelled while waiting: stop() must not wait for it
            future.cancel()
            raise
        return await future

    async def _own(self) -> None:
        queue = self._queue
        assert queue is not None
        running: dict[asyncio.Future[None], frozenset[Any] | None] = {}
        try:
            while True:
                job = await queue.get()
                if job.future.done():  # its caller gave up while it waited
                    continue
                while running and not self._may_start(job.keys, running):
                    await asyncio.wait(list(running), return_when=asyncio.FIRST_COMPLETED)
                    for done in [t for t in running if t.done()]:
                        del running[done]
                if self.write_concurrency == 1:
                    await _serve(job)  # in order, one at a time
                else:
                    running[asyncio.ensure_future(_serve(job))] = job.keys
        finally:  # only cancellation ends the owner; fail whatever is still queued
            while not queue.empty():
                job = queue.get_nowait()
                if not job.future.done():
                    job.future.set_exception(RuntimeError(f"{self!r} stopped"))

    def _may_start(
        self, keys: frozenset[Any] | None, running: dict[asyncio.Future[None], Any]
    ) -> bool:
        live = [k for t, k in running.items() if not t.done()]
        if not live:
            return True
        if keys is None or len(live) >= self.write_concurrency:
            return False
        return all(k is not None and not (k & keys) for k in live)

    async def _run(self, fn: Callable[[Store], T], reader: bool = False) -> T:
        """Run ``fn(store)`` in the store thread (or the read thread)."""
        assert self._executor is not None and self._store is not None
        executor = self._reader if reader and self._reader is not None else self._executor
        return await asyncio.get_running_loop().run_in_executor(executor, fn, self._store)

    async def _retrying(self, what: str, fn: Callable[[Store], T], reader: bool = False) -> T:
        """:meth:`_run`, retrying transient errors up to ``policy.max_retries`` times."""
        policy = self.policy

        def retried(e: Exception, attempt: int, wait_s: float) -> None:
            self.retries += 1
            tries = "?" if policy.max_retries is None else policy.max_retries + 1
            log.warning(
                "qdrant %s failed (attempt %d of %s), retrying in %.2fs: %s",
                what, attempt, tries, wait_s, describe_error(e),
            )  # fmt: skip

        try:
            return await policy.run(
                lambda: self._run(fn, reader),
                retryable=is_transient,
                at_least_s=retry_after_s,
                on_retry=retried,
            )
        except RetriesSpent as spent:
            raise SinkUnavailableError(what, spent.tries, spent.last) from spent.last


async def _serve(job: _Job) -> None:
    try:
        result = await job.run()
    except Exception as e:
        if not job.future.done():
            job.future.set_exception(e)
    else:
        if not job.future.done():
            job.future.set_result(result)


def _close(store: Store | None) -> None:
    if store is not None:
        store.close()
