"""One thread per process runs every CPU forward pass (and the CPU model loads of the engines'
callers), so that OpenMP keeps one team of threads.

Why: torch's CPU kernels run on OpenMP (libgomp in the Linux wheels), which keeps a separate
team of worker threads for every thread that starts parallel regions. Once libgomp manages more
threads than there are CPUs, its workers stop spinning between regions, so every operator ends
in a futex sleep and a wake-up.

:data:`CPU_COMPUTE` is that thread. Work is taken by lane (``lanes.Lane``: lower first, the
same order as the engines' queues), then in arrival order: query batches pass ahead of queued
ingestion batches, interactive ones ahead of bulk ones. A forward already running is not
interrupted, but it offers the thread at safe points (:func:`yield_to_urgent`, between encoder
layers and SPLADE logit blocks): queued work of a more urgent lane runs there, nested, and the
forward resumes. A query then waits for one layer of an ingestion batch, not for the batch.

A call made on the compute thread itself runs inline. The caller's intra-op thread count
(``torch.set_num_threads``, per thread once a thread has run an operator) is applied on the
compute thread before the call. CUDA engines keep their own threads: kernels are queued
asynchronously, and no OpenMP team is involved.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import torch

from poolq.worker.engine.batching.lanes import Lane, compute_key, preempts
from poolq.worker.engine.execution.thread_names import name_os_thread

T = TypeVar("T")


class ComputeThread:
    def __init__(self, name: str = "poolq-cpu") -> None:
        self.name = name
        # (compute_key(lane, arrival), job): ordered as lanes.py says
        self._queue: queue.PriorityQueue[tuple[tuple[int, int], Callable[[], None]]] = (
            queue.PriorityQueue()
        )
        self._order = itertools.count()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._running_lane: Lane | None = None  # of the job on the thread now

    def on_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def run(self, fn: Callable[..., T], *args: Any, lane: Lane = Lane.BULK) -> T:
        """``fn(*args)`` on the compute thread; blocks the caller, returns or raises its result."""
        if self.on_thread():
            return fn(*args)
        done: Future[T] = Future()
        threads = torch.get_num_threads()

        def job() -> None:
            if not done.set_running_or_notify_cancel():
                return
            try:
                if torch.get_num_threads() != threads:
                    torch.set_num_threads(threads)
                done.set_result(fn(*args))
            except BaseException as exc:  # handed to the caller, who re-raises it
                done.set_exception(exc)

        self._start()
        self._queue.put((compute_key(lane, next(self._order)), job))
        return done.result()

    def yield_to_urgent(self) -> None:
        """Called inside a long job at a safe point: run, now and nested, the queued work whose
        lane is more urgent than the running job's. No-op off the compute thread."""
        if self._running_lane is None or not self.on_thread():
            return
        while self._more_urgent_queued(self._running_lane):
            self._run_job(self._queue.get_nowait())  # the head: the most urgent, then oldest

    def _more_urgent_queued(self, running: Lane) -> bool:
        """Peek at the queue's head (a heap) without taking it."""
        with self._queue.mutex:
            head = self._queue.queue[0] if self._queue.queue else None
        return head is not None and preempts(Lane(head[0][0]), running)

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        name_os_thread("poolq-compute")  # before torch starts its OpenMP team from here
        while True:
            self._run_job(self._queue.get())

    def _run_job(self, item: tuple[tuple[int, int], Callable[[], None]]) -> None:
        outer, self._running_lane = self._running_lane, Lane(item[0][0])
        try:
            item[1]()
        finally:
            self._running_lane = outer


CPU_COMPUTE = ComputeThread()
yield_to_urgent = CPU_COMPUTE.yield_to_urgent  # a safe point (see the module docstring)
