"""A job's lane comes from its queue score alone (``wire/placement.py``): the worker never reads
a job's record, up to 64 MiB, to learn its priority."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from poolq.wire.placement import ARQ_EXPIRES_EXTRA_MS, due_ms, priority_of_score, score_ms

NOW = 1_800_000_000_000  # ms


@given(
    priority=st.sampled_from(["interactive", "bulk"]),
    delay_ms=st.integers(0, 3_600_000),  # a retry's backoff, up to an hour
    waited_ms=st.integers(0, ARQ_EXPIRES_EXTRA_MS),  # queued up to arq's expiry
)
def test_the_score_tells_the_priority_it_was_placed_with(priority, delay_ms, waited_ms):
    enqueued = NOW - waited_ms
    score = score_ms(priority, enqueued, delay_ms)
    assert priority_of_score(score, NOW) == priority
    assert due_ms(score, NOW) == enqueued + delay_ms


def test_an_unknown_priority_places_and_reads_as_bulk():
    assert priority_of_score(score_ms(None, NOW), NOW) == "bulk"
    assert priority_of_score(score_ms("urgent", NOW), NOW) == "bulk"
