"""Retries with exponential backoff and full jitter, within a time budget.

A :class:`~poolq.worker.fetch.errors.Transient` failure is tried again after a random wait
between 0 and ``min(cap, base * 2**attempt)`` seconds (full jitter: many workers retrying a
throttled store do not retry in step); once ``budget_s`` has passed the last failure is raised
as :class:`~poolq.worker.fetch.errors.StoreUnavailable`. The budget comes from
``POOLQ_SOURCE_RETRY_S`` (default 120 s).
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from poolq.worker.fetch.errors import StoreUnavailable, Transient

T = TypeVar("T")
DEFAULT_BUDGET_S = 120.0


def budget_from_env() -> float:
    raw = os.environ.get("POOLQ_SOURCE_RETRY_S", "")
    try:
        return float(raw) if raw.strip() else DEFAULT_BUDGET_S
    except ValueError:
        raise ValueError(f"POOLQ_SOURCE_RETRY_S: expected seconds, got {raw!r}") from None


@dataclass(frozen=True)
class Backoff:
    base_s: float = 0.2
    cap_s: float = 10.0
    budget_s: float = DEFAULT_BUDGET_S

    def wait_s(self, attempt: int) -> float:
        return random.uniform(0.0, min(self.cap_s, self.base_s * 2**attempt))

    async def run(self, attempt_once: Callable[[], Awaitable[T]]) -> T:
        """``attempt_once()`` until it succeeds, fails for good, or the budget is spent."""
        deadline = time.monotonic() + self.budget_s
        attempt = 0
        while True:
            try:
                return await attempt_once()
            except Transient as e:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StoreUnavailable(
                        e.uri, f"{e.message} (still failing after {self.budget_s:g}s of retries)"
                    ) from None
                await asyncio.sleep(min(left, self.wait_s(attempt)))
                attempt += 1


def default_backoff() -> Backoff:
    return Backoff(budget_s=budget_from_env())
