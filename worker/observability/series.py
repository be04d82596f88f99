"""The worker's writer of the dashboard's time series (``wire/series.py``): called by the
heartbeat thread after each beat, it writes at most once every ``SERIES_STEP_S``: the increase
of the worker's counters since its last write (documents and chunks finished, jobs done and
failed, from the heartbeat it just wrote) and the depth of the queues, in one script call and
one pipeline of two ``ZCARD``. Best effort: Redis trouble only skips a step."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from poolq.wire import constants
from poolq.wire.records.heartbeat import Heartbeat
from poolq.wire.series import WRITE_SCRIPT, script_args

QUEUES = (constants.INGEST_QUEUE, constants.PARSE_QUEUE)


class SeriesWriter:
    def __init__(
        self, *, step_s: float = constants.SERIES_STEP_S, clock: Callable[[], float] = time.time
    ) -> None:
        self.step_s = step_s
        self.clock = clock
        self._last: dict[str, int] | None = None
        self._written_at = -float("inf")
        self._script: Any = None
        self.writes = 0

    def after_beat(self, redis: Any, beat: Heartbeat) -> None:
        """(The heartbeat thread, sync Redis) Write a step when one is due."""
        now = self.clock()
        if now - self._written_at < self.step_s:
            return
        self._written_at = now
        counts = {
            "documents": beat.documents_done,
            "chunks": beat.chunks_done,
            "done": beat.jobs_done,
            "failed": beat.jobs_failed,
        }
        last = self._last if self._last is not None else dict.fromkeys(counts, 0)
        values: dict[str, int] = {k: max(0, v - last.get(k, 0)) for k, v in counts.items()}
        try:
            with redis.pipeline(transaction=False) as p:
                for q in QUEUES:
                    p.zcard(q)
                values["depth"] = sum(int(n) for n in p.execute())
            if self._script is None:
                self._script = redis.register_script(WRITE_SCRIPT)
            keys, argv = script_args(values, now)
            self._script(keys=keys, args=argv)
        except Exception:  # best effort: the next step writes the increase since this one
            return
        self._last = counts
        self.writes += 1
