"""Room in an engine's queue: at most ``limit_tokens`` tokens wait in its scheduler; callers
beyond that wait here, in lane order (``lanes.py``), and queries never wait.

A hard cap on one engine's own queue, not the worker's admission bound (settings'
``max_queued_tokens``, ``runtime/admission.py``), which keeps the queue far below it by taking
jobs only while there is room. A single submission larger than the cap is admitted alone into
an empty queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from poolq.worker.engine.batching.lanes import Lane, waits_for_room


class QueueRoom:
    def __init__(self, limit_tokens: int, queued_tokens: Callable[[], int]) -> None:
        self.limit_tokens = limit_tokens
        self._queued_tokens = queued_tokens  # the scheduler's, read under the event loop
        self._cond = asyncio.Condition()
        self._waiting: dict[Lane, int] = {}  # callers waiting for room, by lane
        self.event_loop: asyncio.AbstractEventLoop | None = None

    async def admit(self, tokens: int, lane: Lane) -> None:
        """(Event loop) Return once ``tokens`` more fit, behind every caller of a more urgent
        lane waiting for room."""
        waiting = self._waiting
        if waits_for_room(lane, waiting) is False:
            return

        def fits() -> bool:
            if waits_for_room(lane, waiting):
                return False
            queued = self._queued_tokens()
            return queued == 0 or queued + tokens <= self.limit_tokens

        if not waiting and fits():  # the common case: no lock, no wake-ups
            return
        async with self._cond:
            waiting[lane] = waiting.get(lane, 0) + 1
            try:
                await self._cond.wait_for(fits)
            finally:
                waiting[lane] -= 1
                if not waiting[lane]:
                    del waiting[lane]
                self._cond.notify_all()  # the callers of later lanes look again

    def freed(self) -> None:
        """(Any thread) Tokens left the queue: the waiting callers look again."""
        loop = self.event_loop
        if not self._waiting or loop is None or loop.is_closed():
            return

        async def notify() -> None:
            async with self._cond:
                self._cond.notify_all()

        asyncio.run_coroutine_threadsafe(notify(), loop)
