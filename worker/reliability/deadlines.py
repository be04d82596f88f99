"""Deadlines that measure progress: a job is timed out when it stops moving, not because other
jobs share its engine.

Jobs share one engine, so a job's wall time depends on everything else the worker runs. A
wall-clock timeout (arq's) therefore cancels healthy jobs under load. Instead every job runs
under two limits (``Settings``):

* ``job_stall_timeout_s`` (``POOLQ_JOB_STALL_TIMEOUT_S``, default 120 s): the longest a job may go
  without progress. Progress is any change the job reports (chunked, encoded, refused, written:
  :class:`JobClock` ticks with each), any engine batch that computed one of its chunks, and the
  time its chunks wait in an engine that is working (``AsyncEngine.progress_of``: waiting one's
  turn is not a stall);
* ``job_timeout_s`` (``POOLQ_JOB_TIMEOUT_S``, default 3600 s): a ceiling on the whole run, for
  runaway jobs. arq's own timeout is set past it, so that it never fires first.

A job past either limit is cancelled and fails with :class:`JobStalledError` or
:class:`JobTimedOutError`, whose message names the job, its try, its progress and the time
spent; the job guard retries it with backoff and dead-letters it after its last try.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.progress import JobProgressRecord

CHECK_EVERY_S = 1.0  # how often the watchdog looks (at most: a quarter of the stall limit)


class JobDeadlineError(TimeoutError):
    """A job cancelled by its deadline (transient: retried, then dead-lettered)."""


class JobStalledError(JobDeadlineError):
    code = ErrorCode.STALLED


class JobTimedOutError(JobDeadlineError):
    code = ErrorCode.TIMEOUT


class ProgressState(Protocol):
    def state(self) -> JobProgressRecord: ...


class JobClock:
    """When a job last made progress (``time.monotonic()``), and what it has done so far."""

    def __init__(self) -> None:
        self.started = self.last_tick = time.monotonic()
        self.progress: ProgressState | None = None  # the job's JobProgress, once it has one

    def tick(self) -> None:
        self.last_tick = time.monotonic()

    def describe(self) -> str:
        """``3/32 documents done, 140 points written`` (or that it had not begun)."""
        if self.progress is None:
            return "no document started"
        s = self.progress.state()
        return f"{s.done}/{s.documents} documents done, {s.points} points written"


async def run_with_deadlines(
    body: Coroutine[Any, Any, Any],
    *,
    what: str,
    clock: JobClock,
    stall_s: float | None,
    ceiling_s: float | None,
    engine_progress: Callable[[], float | None] = lambda: None,
) -> Any:
    """Await ``body`` (the job), cancelling it once it has made no progress for ``stall_s``
    (``clock`` ticks and ``engine_progress()``, the last time an engine computed one of its
    chunks) or has run for ``ceiling_s``; then raise the matching :class:`JobDeadlineError`.
    ``what``: how messages name the job (``job 1f3a… ingest, try 1 of 5``). None: no limit."""
    task = asyncio.ensure_future(body)
    limits = [x for x in (stall_s, ceiling_s) if x]
    every = min([CHECK_EVERY_S, *(x / 4 for x in limits)])
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            now = time.monotonic()
            served = engine_progress()
            last = max(clock.last_tick, served if served is not None else 0.0)
            error: JobDeadlineError | None = None
            if stall_s and now - last > stall_s:
                error = JobStalledError(
                    f"{what}: no progress for {now - last:.0f}s (stall limit {stall_s:g}s, "
                    f"POOLQ_JOB_STALL_TIMEOUT_S); {clock.describe()}; "
                    f"{now - clock.started:.0f}s since it started"
                )
            elif ceiling_s and now - clock.started > ceiling_s:
                error = JobTimedOutError(
                    f"{what}: still running after {now - clock.started:.0f}s (ceiling "
                    f"{ceiling_s:g}s, POOLQ_JOB_TIMEOUT_S); {clock.describe()}"
                )
            if error is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
                raise error
    finally:
        if not task.done():  # we were cancelled (shutdown): the job goes with us
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
