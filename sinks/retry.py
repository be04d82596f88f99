"""Retrying transient store failures (:class:`~poolq.wire.backoff.Backoff`: exponential backoff
with full jitter, at least what a server's 429 asks for), and a clear error once the retries run
out."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from poolq.sinks.store.errors import (
    SinkUnavailableError,
    describe_error,
    is_transient,
    retry_after_s,
)
from poolq.wire.backoff import Backoff, RetriesSpent

log = logging.getLogger("poolq.sinks.writer")
T = TypeVar("T")


async def retrying(
    what: str,
    run: Callable[[], Awaitable[T]],
    policy: Backoff,
    on_retry: Callable[[], None] | None = None,
) -> T:
    """``await run()``, retrying transient errors up to ``policy.max_retries`` times."""

    def retried(e: Exception, attempt: int, wait_s: float) -> None:
        if on_retry is not None:
            on_retry()
        tries = "?" if policy.max_retries is None else policy.max_retries + 1
        log.warning(
            "qdrant %s failed (attempt %d of %s), retrying in %.2fs: %s",
            what, attempt, tries, wait_s, describe_error(e),
        )  # fmt: skip

    try:
        return await policy.run(
            run, retryable=is_transient, at_least_s=retry_after_s, on_retry=retried
        )
    except RetriesSpent as spent:
        raise SinkUnavailableError(what, spent.tries, spent.last) from spent.last
