"""Fetches retried with :class:`~poolq.wire.backoff.Backoff` (exponential backoff, full
jitter) within a time budget: a :class:`~poolq.worker.fetch.errors.Transient` failure is tried
again; once ``budget_s`` has passed the last one is raised as
:class:`~poolq.worker.fetch.errors.SourceUnavailable`. The budget comes from
``POOLQ_SOURCE_RETRY_S`` (default 120 s).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from poolq.wire.backoff import Backoff, RetriesSpent
from poolq.worker.fetch.errors import SourceUnavailable, Transient

T = TypeVar("T")
DEFAULT_BUDGET_S = 120.0


def default_backoff(budget_s: float = DEFAULT_BUDGET_S) -> Backoff:
    return Backoff(budget_s=budget_s)


def unavailable(e: Transient, budget_s: float | None) -> SourceUnavailable:
    return SourceUnavailable(e.uri, f"{e.message} (still failing after {budget_s:g}s of retries)")


async def retried(backoff: Backoff, attempt_once: Callable[[], Awaitable[T]]) -> T:
    """``attempt_once()`` until it succeeds, fails for good, or the budget is spent."""
    try:
        return await backoff.run(attempt_once, retryable=lambda e: isinstance(e, Transient))
    except RetriesSpent as spent:
        assert isinstance(spent.last, Transient)
        raise unavailable(spent.last, backoff.budget_s) from None
