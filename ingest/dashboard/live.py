"""The overview's live tick, shared: every open page (and ``GET /api/overview``) reads the same
snapshot, computed at most once every ``TICK_S`` whoever asks; within a tick only the queues
and the running jobs are read again every time (:func:`~.overview.queues`), the job counts
and the workers' heartbeats every ``COUNTS_EVERY_S``, the charts' series every
``SERIES_STEP_S`` (the step the workers write them at). So the Redis
commands a second stay the same however many people watch, and on average a tick costs about
half of what a full read does (``benchmarks/bench_dashboard.py`` counts both)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from poolq.ingest.dashboard import overview as reads
from poolq.wire import constants

TICK_S = 1.0
COUNTS_EVERY_S = 5.0


class LiveOverview:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._lock = asyncio.Lock()
        self._snapshot: tuple[float, dict[str, Any]] | None = None
        self._counts: tuple[float, dict[str, Any]] | None = None
        self._series: tuple[float, dict[str, Any]] | None = None

    async def get(self, redis: Any) -> dict[str, Any]:
        async with self._lock:
            now = self.clock()
            if self._snapshot is not None and now - self._snapshot[0] < TICK_S:
                return self._snapshot[1]
            if self._counts is None or now - self._counts[0] >= COUNTS_EVERY_S:
                self._counts = (now, await reads.counts(redis, now=now))
            if self._series is None or now - self._series[0] >= constants.SERIES_STEP_S:
                self._series = (now, await reads.series(redis, now=now))
            queues = await reads.queues(redis, now=now, live=self._counts[1]["live"])
            snapshot = reads.assemble(now, queues, self._counts[1], self._series[1])
            self._snapshot = (now, snapshot)
            return snapshot
