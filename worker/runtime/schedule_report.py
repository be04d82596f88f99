"""The reindex schedules a worker reports in its heartbeat (``ScheduledReindex``: the
dashboard's next scheduled run), each next run found with arq's own ``next_cron`` and
remembered until it has passed (the heartbeat is built every 2 s)."""

from __future__ import annotations

import time
from datetime import datetime

from arq.cron import next_cron

from poolq.wire.records.heartbeat import ScheduledReindex
from poolq.worker.config.schedule import ReindexSchedule, parse_cron


class ScheduleReport:
    def __init__(self, schedules: tuple[ReindexSchedule, ...]) -> None:
        self.schedules = schedules
        self._next: list[float | None] = [None] * len(schedules)

    def records(self, now: float | None = None) -> list[ScheduledReindex]:
        now = time.time() if now is None else now
        out = []
        for i, s in enumerate(self.schedules):
            nxt = self._next[i]
            if nxt is None or nxt <= now:
                fields = {k: v for k, v in parse_cron(s.cron).items() if v is not None}
                try:
                    nxt = next_cron(datetime.fromtimestamp(now), **fields).timestamp()  # type: ignore[arg-type]
                except Exception:  # a schedule arq cannot place: reported without a next run
                    nxt = None
                self._next[i] = nxt
            out.append(ScheduledReindex(s.collection, s.source, s.cron, s.full, nxt))
        return out
