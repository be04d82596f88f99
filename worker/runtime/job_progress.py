"""The progress of one running job, published for clients under ``JOB_PROGRESS_KEY``.

A Redis hash of the fields of :class:`~poolq.wire.records.progress.JobProgressRecord` (the one
declaration of them), which :attr:`JobProgress.counts` holds; it expires ``JOB_PROGRESS_TTL_S``
after the last update. The job publishes at its milestones (:meth:`JobProgress.publish`: after
chunking when the job writes more than one part, after each part is encoded and written, at the
end), and between them any change, its first state included, is published within
``JOB_PROGRESS_EVERY_S``: by the worker's :class:`ProgressBoard`, which writes every running job
that changed in one pipeline (one round trip a tick however many jobs run; a job that ends
within a tick is written once, at its end), or, for a job run without one, by a ticker task of
its own (and at its start). Writes of one job never cross: a job's milestones and the board's
batches take the board's lock, so the hash's last write is the job's last state. Best effort:
Redis trouble never fails the job. Each write also sets ``updated_at`` (the dashboard's stall
timer); :meth:`JobProgress.cancel_requested` reads the job's cancel flag (``wire/cancel.py``) at
a batch boundary.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import InitVar, dataclass, field, replace
from typing import Any

from poolq.wire import constants
from poolq.wire.cancel import cancel_key
from poolq.wire.records.progress import JobProgressRecord

TICK_S = constants.JOB_PROGRESS_EVERY_S / 2


@dataclass(eq=False)
class JobProgress:
    redis: Any  # redis.asyncio client, or None (nothing is published)
    job_id: str
    documents: InitVar[int] = 0  # in the job (the rest of the counts start at 0: :meth:`add`)
    clock: Any = None  # the job's deadlines.JobClock: every change is progress
    board: ProgressBoard | None = None  # the worker's; None: a ticker task of the job's own
    counts: JobProgressRecord = field(default_factory=JobProgressRecord)
    _published: JobProgressRecord | None = None
    _ticker: asyncio.Task[None] | None = None

    @property
    def key(self) -> str:
        return constants.JOB_PROGRESS_KEY.format(job_id=self.job_id)

    def state(self) -> JobProgressRecord:
        return self.counts

    def __post_init__(self, documents: int) -> None:
        self.counts = replace(self.counts, documents=documents)
        if self.clock is not None:
            self.clock.progress = self

    def add(self, **deltas: int) -> None:
        """Add to the counts (``done=1, chunks=12``: the record's field names)."""
        c = self.counts
        self.counts = replace(c, **{name: getattr(c, name) + n for name, n in deltas.items()})
        if self.clock is not None and any(deltas.values()):
            self.clock.tick()

    async def publish(self) -> None:
        """Write the current state now (when it changed since the last write)."""
        if self.redis is None:
            return
        async with self.board.lock if self.board is not None else contextlib.nullcontext():
            await _write(self.redis, [self])

    async def cancel_requested(self) -> bool:
        """Whether the job was asked to stop (one ``EXISTS``; False without Redis, or when
        Redis does not answer: a cancel is then seen at the next boundary)."""
        if self.redis is None:
            return False
        try:
            return bool(await self.redis.exists(cancel_key(self.job_id)))
        except Exception:
            return False

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            await self.publish()

    async def __aenter__(self) -> JobProgress:
        if self.redis is None:
            return self
        if self.board is not None:  # its first state goes out with the board's next tick
            self.board.watch(self)
        else:
            await self.publish()
            self._ticker = asyncio.create_task(self._tick(), name=f"progress-{self.job_id}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.board is not None:
            self.board.forget(self)
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        await self.publish()


async def _write(redis: Any, jobs: list[JobProgress]) -> None:
    """The jobs' states that changed since their last write, in one pipeline."""
    changed = [(p, s) for p in jobs if (s := p.state()) != p._published]
    if not changed:
        return
    with contextlib.suppress(Exception):  # best effort: never fail a job over progress
        async with redis.pipeline(transaction=False) as pipe:
            for p, state in changed:
                mapping = state.to_hash() | {"updated_at": int(time.time())}
                pipe.hset(p.key, mapping=mapping)
                pipe.expire(p.key, constants.JOB_PROGRESS_TTL_S)
            await pipe.execute()
        for p, state in changed:
            p._published = state


class ProgressBoard:
    """The worker's publisher of its running jobs' progress between their milestones (see the
    module docstring): one task, awake every ``TICK_S`` while a job is watched."""

    def __init__(self, redis: Any) -> None:
        self.redis = redis
        self.lock = asyncio.Lock()
        self._jobs: dict[int, JobProgress] = {}
        self._task: asyncio.Task[None] | None = None

    def watch(self, progress: JobProgress) -> None:
        self._jobs[id(progress)] = progress
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="progress-board")

    def forget(self, progress: JobProgress) -> None:
        self._jobs.pop(id(progress), None)

    async def _run(self) -> None:
        while self._jobs:
            await asyncio.sleep(TICK_S)
            async with self.lock:
                await _write(self.redis, list(self._jobs.values()))

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
