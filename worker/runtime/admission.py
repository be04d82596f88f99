"""Admission by capacity: a worker takes a new job only while its engines have room for it.

Jobs share the worker's engines, so it takes a bulk job only while the tokens queued in its
ingest engines stay below ``bound_tokens`` (``max_queued_tokens``, default
:func:`default_bound`), as TEI's queue and vLLM's scheduler bound their work by tokens; jobs
beyond that wait in Redis, where no timeout runs, and any worker with room may take them. A job
just taken counts with an estimate of its tokens (its payload's size in Redis over
:data:`BYTES_PER_TOKEN`) until its chunks reach the engines, so one poll takes as many small
jobs as fit, and never the whole queue blind. Interactive jobs (small by rule) are taken
whenever a job slot is free; ``max_jobs`` remains the upper limit on running jobs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from poolq.worker.engine.batching.lanes import Lane, may_take_job

BATCHES_QUEUED = 8  # the default bound: this many full batches of the ingest engine
STARTING_GRACE_S = 10.0  # a job that has not queued its chunks by then stops counting
BYTES_PER_TOKEN = 4  # English text in a msgpack payload: about 4 bytes a token


def default_bound(max_batch_tokens: int) -> int:
    """Enough queued work to keep the engine busy while the next job is read, checked against
    the store, chunked and tokenized (a few hundred ms on a CPU), and no more: on a CPU
    (2,048-token batches) 16,384 tokens, about 2-4 s of MiniLM work on 2 cores."""
    return BATCHES_QUEUED * max_batch_tokens


class Admission:
    def __init__(self, bound_tokens: int, queued_tokens: Callable[[], int]) -> None:
        if bound_tokens < 1:
            raise ValueError(f"max_queued_tokens must be >= 1, got {bound_tokens}")
        self.bound_tokens = bound_tokens
        self.queued_tokens = queued_tokens  # tokens waiting in the ingest engines now
        self._starting: dict[str, tuple[float, int]] = {}  # job id -> (when taken, tokens)
        self._lock = threading.Lock()

    def room(self, lane: Lane) -> bool:
        """Whether a job of ``lane`` may be taken now (``lanes.may_take_job``)."""
        return may_take_job(lane, 0 if lane <= Lane.INTERACTIVE else self.load(), self.bound_tokens)

    def load(self) -> int:
        """Queued tokens, and the estimates of the jobs taken that have not queued theirs."""
        now = time.monotonic()
        with self._lock:
            starting = sum(n for t, n in self._starting.values() if now - t < STARTING_GRACE_S)
        return self.queued_tokens() + starting

    def taken(self, job_id: str, payload_bytes: int) -> None:
        """A job was taken; ``payload_bytes``: its size in Redis (the estimate of its tokens)."""
        tokens = max(1, min(payload_bytes // BYTES_PER_TOKEN, self.bound_tokens))
        with self._lock:
            self._starting[job_id] = (time.monotonic(), tokens)

    def queued(self, job_id: str) -> None:
        """The job's chunks are in the engines (or it has none): its tokens count from there."""
        with self._lock:
            self._starting.pop(job_id, None)

    ended = queued  # a job that ends before it queued anything stops holding the bound
