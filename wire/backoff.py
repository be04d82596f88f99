"""Retries with exponential backoff and full jitter: the one helper for every retry loop (the
store's writer, ``sinks/owner.py``; object stores and web URLs, ``worker/fetch/``).

A failure that ``retryable`` accepts is tried again after a random wait between 0 and
``min(cap_s, base_s * 2**attempt)`` seconds (full jitter: many workers retrying a throttled
service do not retry in step), and at least what ``at_least_s(error)`` says (a server's
Retry-After). The retries end after ``max_retries`` of them, or once ``budget_s`` seconds have
passed, whichever comes first (None: no such bound); then :class:`RetriesSpent` carries the last
error and the number of tries, for the caller to say what was unavailable. The standard library
only: the client, the parse role and the sink all use it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


class RetriesSpent(Exception):
    """Every retry failed: ``last`` is the last error, ``tries`` the attempts made."""

    def __init__(self, last: Exception, tries: int, budget_s: float | None) -> None:
        super().__init__(str(last))
        self.last, self.tries, self.budget_s = last, tries, budget_s


@dataclass(frozen=True)
class Backoff:
    base_s: float = 0.2
    cap_s: float = 10.0
    max_retries: int | None = None  # retries after the first try (None: until the budget)
    budget_s: float | None = None  # seconds of retrying (None: until max_retries)
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        m = self.max_retries
        if m is not None and (isinstance(m, bool) or not isinstance(m, int) or m < 0):
            raise ValueError(f"max_retries: expected an integer >= 0, got {m!r}")
        if not 0 <= self.base_s <= self.cap_s:
            raise ValueError(
                f"backoff: expected 0 <= base_s <= cap_s, got {self.base_s} and {self.cap_s}"
            )

    def wait_s(self, attempt: int) -> float:
        """Seconds to wait before retry ``attempt + 1`` (full jitter)."""
        return self.rng.uniform(0.0, min(self.cap_s, self.base_s * 2**attempt))

    async def run(
        self,
        attempt_once: Callable[[], Awaitable[T]],
        *,
        retryable: Callable[[Exception], bool],
        at_least_s: Callable[[Exception], float] = lambda e: 0.0,
        on_retry: Callable[[Exception, int, float], None] | None = None,
    ) -> T:
        """``await attempt_once()`` until it succeeds, fails in a way ``retryable`` refuses
        (raised as it is), or the retries are spent (:class:`RetriesSpent`).
        ``on_retry(error, retry number, wait in seconds)`` is called before each wait."""
        deadline = None if self.budget_s is None else time.monotonic() + self.budget_s
        attempt = 0
        while True:
            try:
                return await attempt_once()
            except Exception as e:
                if not retryable(e):
                    raise
                left = None if deadline is None else deadline - time.monotonic()
                if (left is not None and left <= 0) or (
                    self.max_retries is not None and attempt >= self.max_retries
                ):
                    raise RetriesSpent(e, attempt + 1, self.budget_s) from e
                wait = max(self.wait_s(attempt), at_least_s(e))
                wait = wait if left is None else min(left, wait)
                attempt += 1
                if on_retry is not None:
                    on_retry(e, attempt, wait)
                await asyncio.sleep(wait)
