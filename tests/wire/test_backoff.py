"""The one retry helper: a bounded count of retries or a time budget, jittered waits no shorter
than what a server asks for, and errors it may not retry raised at once."""

from __future__ import annotations

import asyncio
import random

import pytest

from poolq.wire.backoff import Backoff, RetriesSpent


class Flaky(Exception):
    pass


def failing(n: int, tries: list[int], error: type[Exception] = Flaky):
    async def once() -> str:
        tries.append(1)
        if len(tries) <= n:
            raise error("down")
        return "ok"

    return once


def fast(**kw) -> Backoff:
    return Backoff(base_s=0.0, cap_s=0.0, **kw)


def test_max_retries_counts_the_retries_after_the_first_try():
    tries: list[int] = []
    ok = asyncio.run(fast(max_retries=3).run(failing(3, tries), retryable=lambda e: True))
    assert ok == "ok" and len(tries) == 4
    tries.clear()
    with pytest.raises(RetriesSpent) as spent:
        asyncio.run(fast(max_retries=2).run(failing(9, tries), retryable=lambda e: True))
    assert len(tries) == 3 and spent.value.tries == 3 and isinstance(spent.value.last, Flaky)


def test_an_error_it_may_not_retry_is_raised_as_it_is():
    tries: list[int] = []
    with pytest.raises(KeyError):
        asyncio.run(
            fast(max_retries=5).run(
                failing(9, tries, KeyError), retryable=lambda e: isinstance(e, Flaky)
            )
        )
    assert len(tries) == 1


def test_waits_are_jittered_capped_and_at_least_what_the_server_asks():
    b = Backoff(base_s=1, cap_s=4, rng=random.Random(7))
    waits = [b.wait_s(10) for _ in range(200)]
    assert all(0 <= w <= 4 for w in waits) and len(set(waits)) > 100
    assert max(Backoff(base_s=1, cap_s=4).wait_s(0) for _ in range(200)) <= 1
    seen: list[float] = []
    tries: list[int] = []
    asyncio.run(
        fast(max_retries=2).run(
            failing(2, tries), retryable=lambda e: True, at_least_s=lambda e: 0.01,
            on_retry=lambda e, n, wait: seen.append(wait),
        )
    )  # fmt: skip
    assert seen == [0.01, 0.01]


def test_a_backoff_that_cannot_be_is_refused():
    with pytest.raises(ValueError, match="base_s <= cap_s"):
        Backoff(base_s=2, cap_s=1)
    with pytest.raises(ValueError, match="max_retries"):
        Backoff(max_retries=-1)
