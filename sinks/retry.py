"""Retrying transient store failures: exponential backoff with full jitter, at least what a
server's 429 asks for, and a clear error once the retries run out."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from poolq.sinks.store.errors import (
    SinkUnavailableError,
    describe_error,
    is_transient,
    retry_after_s,
)

log = logging.getLogger("poolq.sinks.writer")
T = TypeVar("T")


@dataclass
class RetryPolicy:
    max_retries: int = 6
    backoff_s: float = 0.2
    max_backoff_s: float = 5.0
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        m = self.max_retries
        if isinstance(m, bool) or not isinstance(m, int) or m < 0:
            raise ValueError(f"max_retries: expected an integer >= 0, got {m!r}")
        if not 0 <= self.backoff_s <= self.max_backoff_s:
            raise ValueError(
                f"expected 0 <= backoff_s <= max_backoff_s, got {self.backoff_s} and "
                f"{self.max_backoff_s}"
            )

    def delay(self, attempt: int, e: BaseException) -> float:
        """Seconds before retry ``attempt + 1``."""
        delay = self.rng.uniform(0, min(self.max_backoff_s, self.backoff_s * 2**attempt))
        return max(delay, retry_after_s(e))


async def retrying(
    what: str,
    run: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    on_retry: Callable[[], None] | None = None,
) -> T:
    """``await run()``, retrying transient errors (see the module docstring)."""
    attempt = 0
    while True:
        try:
            return await run()
        except Exception as e:
            if not is_transient(e):
                raise
            if attempt >= policy.max_retries:
                raise SinkUnavailableError(what, attempt + 1, e) from e
            delay = policy.delay(attempt, e)
            attempt += 1
            if on_retry is not None:
                on_retry()
            log.warning(
                "qdrant %s failed (attempt %d of %d), retrying in %.2fs: %s",
                what,
                attempt,
                policy.max_retries + 1,
                delay,
                describe_error(e),
            )
            await asyncio.sleep(delay)
