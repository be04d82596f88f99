"""Progress per group (a job) in one engine, for deadlines that measure progress
rather than time queued (``reliability/deadlines.py``).

Written from two threads without a lock, each field by one of them: the event loop counts each
group's requests queued or in flight (:meth:`GroupProgress.track`); the model thread records
when it last cut or finished anyone's batch, whether it is computing one, and when each group's
requests were last computed (:meth:`GroupProgress.served`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any


class GroupProgress:
    def __init__(self) -> None:
        self.served_at: dict[str, float] = {}  # group -> time.monotonic() last computed
        self.pending: dict[str, int] = {}  # group -> requests queued or in flight
        self.last_activity = time.monotonic()  # the model thread last cut or finished a batch
        self.busy = False  # the model thread is computing a batch (or finishing one)

    def of(self, group: str) -> float | None:
        """When ``group`` last moved here (time.monotonic()): while it has requests queued or
        in flight, the engine's last batch counts (it waits its turn, it is not stuck), and
        while a batch is being computed, now (a forward slowed by a busy core is not stuck; the
        job's ceiling still bounds a forward that hangs); else its last computed request. None:
        nothing of it ever reached this engine."""
        served = self.served_at.get(group)
        if self.pending.get(group):
            if self.busy:  # a forward is running: slow (a busy core) is not stuck
                return time.monotonic()
            return max(self.last_activity, served or 0.0)
        return served

    def forget(self, group: str) -> None:
        """The group is done: drop its record."""
        self.served_at.pop(group, None)
        self.pending.pop(group, None)

    def track(self, group: str, n: int, call: asyncio.Future[Any]) -> None:
        """(Event loop) ``n`` requests of ``group`` were queued, all answered by ``call`` (one
        future per encode call): pending until it is done."""
        self.pending[group] = self.pending.get(group, 0) + n

        def done(_: asyncio.Future[Any]) -> None:
            left = self.pending.get(group, 0) - n
            if left > 0:
                self.pending[group] = left
            else:
                self.pending.pop(group, None)

        call.add_done_callback(done)

    def served(self, groups: Iterable[str]) -> None:
        """(Model thread) a batch of these groups' requests was computed now (only the tracked
        groups are recorded: a call that names no group has nothing to follow)."""
        now = self.last_activity = time.monotonic()
        for g in groups:
            if g in self.pending or g in self.served_at:
                self.served_at[g] = now
