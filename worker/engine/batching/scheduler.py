"""The scheduler owns the queue of tokenized requests and cuts batches from it.

Ordering is ``lanes.py``'s: lane first (queries, then interactive jobs, then bulk), then groups
share the lane by tokens (start-time fair queuing), then arrival. Each batch is filled up to
``max_batch_tokens`` and ``max_batch_requests``; cancelled requests are dropped before they are
batched. With ``chunked_prefill`` (causal models) a request that does not fit the batch's
remaining tokens gets that many of its prompt tokens and stays at the head of the queue for the
next batch; otherwise it waits for the next batch (alone, if over the budget). Every method is
thread-safe: the event loop adds, the engine's batch slots take (``model_thread.py``: one slot
takes any lane, the query slot only queries, so a query never waits for a batch already running).
"""

from __future__ import annotations

import heapq
import threading
import time

from poolq.worker.engine.batching.lanes import FairShare, Lane, OrderKey
from poolq.worker.engine.batching.requests import EncodeRequest
from poolq.worker.pooling.tasks import POOLING_TASKS

MIN_CHUNK_TOKENS = 64  # a prompt chunk smaller than this waits for the next batch instead


def task_sort_key(req: EncodeRequest) -> tuple[int, ...]:
    """Sorts a batch so each task's requests are adjacent (one slice per task in the pooler)."""
    return tuple(sorted(POOLING_TASKS.index(p.task) for p in req.params))


class Scheduler:
    def __init__(self, max_batch_tokens: int, max_batch_requests: int) -> None:
        if max_batch_tokens < 1 or max_batch_requests < 1:
            raise ValueError(
                f"batch limits must be >= 1, got tokens={max_batch_tokens} requests={max_batch_requests}"
            )
        self.max_batch_tokens = max_batch_tokens
        self.max_batch_requests = max_batch_requests
        self._heap: list[tuple[OrderKey, EncodeRequest]] = []
        self._fair = FairShare()
        self._cv = threading.Condition()
        self._closed = False
        # Requests in the heap whose place still counts: cancel() is a set lookup, not a heap
        # scan. A cancelled request leaves this set at once and the heap when next reached.
        self._queued: set[EncodeRequest] = set()
        self.queued_tokens = 0
        self.queued_requests = 0
        self.chunked_prefill = False  # causal models: split prompts over the batch budget

    def add(self, requests: list[EncodeRequest]) -> None:
        with self._cv:
            if self._closed:
                raise RuntimeError("the engine is stopped")
            now = time.monotonic()
            for r in requests:
                r.queued_at = now
                r.start_tag = self._fair.tag(r.lane, r.group, r.num_tokens)
                heapq.heappush(self._heap, (r.order_key(), r))
                self._queued.add(r)
                self.queued_tokens += r.num_tokens
                self.queued_requests += 1
            self._cv.notify_all()  # every slot: the query slot waits only for queries

    def backlog(self, *, queries: bool) -> tuple[int, int]:
        """Tokens and requests waiting in the query lane (or in the other lanes), for metrics:
        a scan of what is queued."""
        with self._cv:
            reqs = [r for r in self._queued if (r.lane == Lane.QUERY) == queries]
            return sum(r.num_tokens - r.num_computed_tokens for r in reqs), len(reqs)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    def drain(self) -> list[EncodeRequest]:
        """Remove and return everything still queued (on shutdown)."""
        with self._cv:
            left = [r for _, r in self._heap]
            self._heap.clear()
            self._queued.clear()
            self.queued_tokens = self.queued_requests = 0
            return left

    def next_batch(
        self,
        timeout_s: float | None = None,
        *,
        max_lane: Lane | None = None,
        max_tokens: int | None = None,
    ) -> list[EncodeRequest] | None:
        """Block until work is queued; ``None`` once closed and empty (or on timeout).
        ``max_lane``: take only requests of this lane or a more urgent one (the query slot),
        whole (never a chunk of a longer prompt), in batches of at most ``max_tokens``."""
        with self._cv:
            while True:
                batch = self._cut(max_lane, max_tokens)
                if batch:
                    return sorted(batch, key=task_sort_key)  # stable: queue order kept per task
                if self._closed or timeout_s == 0 or not self._cv.wait(timeout_s):
                    return None

    def _cut(
        self, max_lane: Lane | None = None, max_tokens: int | None = None
    ) -> list[EncodeRequest]:
        batch: list[EncodeRequest] = []
        tokens = 0
        budget = (
            self.max_batch_tokens if max_tokens is None else min(max_tokens, self.max_batch_tokens)
        )
        chunked = self.chunked_prefill and max_lane is None
        while self._heap and len(batch) < self.max_batch_requests:
            req = self._heap[0][1]
            if req.future.done() or req not in self._queued:  # cancelled or failed: drop it
                heapq.heappop(self._heap)
                if req in self._queued:
                    self._release(req)
                continue
            if max_lane is not None and (req.lane > max_lane or req.num_computed_tokens):
                break  # the heap is in lane order; a prompt in chunks stays with its slot
            left = req.num_tokens - req.num_computed_tokens
            if tokens + left > budget and (batch or chunked):
                room = budget - tokens
                if not chunked or (batch and room < min(MIN_CHUNK_TOKENS, left)):
                    break
                req.prefill_start = req.num_computed_tokens  # a chunk: stays at the head
                req.prefill_end = req.num_computed_tokens = req.prefill_start + room
                self.queued_tokens -= room
                batch.append(req)
                break
            heapq.heappop(self._heap)
            self._release(req)
            self._fair.served(req.lane, req.start_tag)
            req.prefill_start, req.prefill_end = req.num_computed_tokens, -1
            req.num_computed_tokens = req.num_tokens
            batch.append(req)
            tokens += left
        return batch

    def cancel(self, req: EncodeRequest) -> bool:
        """Free a cancelled request's place at once (it leaves the heap when next reached).
        Returns False if it was already batched or already cancelled. O(1): no heap scan."""
        with self._cv:
            if req not in self._queued:
                return False
            self._release(req)
            return True

    def _release(self, req: EncodeRequest) -> None:
        """The request no longer counts as queued (batched or cancelled)."""
        self._queued.discard(req)
        self.queued_tokens -= req.num_tokens - req.num_computed_tokens
        self.queued_requests -= 1
