"""The progress of one running ingest job, published for clients under ``JOB_PROGRESS_KEY``.

A Redis hash with the fields ``documents`` (in the job), ``done`` (documents finished: written,
skipped unchanged, or refused with an error), ``chunks`` (chunked so far), ``points`` (written),
``errors`` and ``skipped``; it expires ``JOB_PROGRESS_TTL_S`` after the last update. The job
publishes at its milestones (:meth:`JobProgress.publish`: after chunking when the job writes
more than one part, after each part is encoded and written, at the end) and a ticker publishes
any change at least every ``JOB_PROGRESS_EVERY_S`` meanwhile. Best effort: Redis trouble never
fails the job.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

from poolq.wire import constants
from poolq.wire.records.progress import JobProgressRecord


@dataclass
class JobProgress:
    redis: Any  # redis.asyncio client, or None (nothing is published)
    job_id: str
    documents: int = 0
    done: int = 0
    chunks: int = 0
    points: int = 0
    errors: int = 0
    skipped: int = 0
    clock: Any = None  # the job's deadlines.JobClock: every change is progress
    _published: JobProgressRecord | None = None
    _ticker: asyncio.Task[None] | None = None

    @property
    def key(self) -> str:
        return constants.JOB_PROGRESS_KEY.format(job_id=self.job_id)

    def state(self) -> JobProgressRecord:
        return JobProgressRecord(
            self.documents, self.done, self.chunks, self.points, self.errors, self.skipped
        )

    def __post_init__(self) -> None:
        if self.clock is not None:
            self.clock.progress = self

    def add(self, **deltas: int) -> None:
        for name, n in deltas.items():
            setattr(self, name, getattr(self, name) + n)
        if self.clock is not None and any(deltas.values()):
            self.clock.tick()

    async def publish(self) -> None:
        """Write the current state now (when it changed since the last write)."""
        state = self.state()
        if self.redis is None or state == self._published:
            return
        with contextlib.suppress(Exception):  # best effort: never fail the job over progress
            async with self.redis.pipeline(transaction=False) as pipe:
                pipe.hset(self.key, mapping=state.to_hash())
                pipe.expire(self.key, constants.JOB_PROGRESS_TTL_S)
                await pipe.execute()
            self._published = state

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(constants.JOB_PROGRESS_EVERY_S / 2)
            await self.publish()

    async def __aenter__(self) -> JobProgress:
        await self.publish()
        if self.redis is not None:
            self._ticker = asyncio.create_task(self._tick(), name=f"progress-{self.job_id}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        await self.publish()
