"""Admission by capacity (``runtime/admission.py``): bulk jobs are taken only while the engines'
queued tokens stay below the bound, counting a job just taken as a full bound until its chunks
are queued; interactive jobs are taken whenever a slot is free."""

from __future__ import annotations

import pytest

from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.runtime import admission as admission_mod
from poolq.worker.runtime.admission import Admission, default_bound


def test_bulk_jobs_wait_while_the_engines_hold_the_bound() -> None:
    queued = [0]
    a = Admission(1000, lambda: queued[0])
    assert a.room(Lane.BULK)
    queued[0] = 999
    assert a.room(Lane.BULK)
    queued[0] = 1000
    assert not a.room(Lane.BULK)
    assert a.room(Lane.INTERACTIVE) and a.room(Lane.QUERY)


def test_a_job_taken_counts_its_estimate_until_its_chunks_are_queued() -> None:
    a = Admission(1000, lambda: 0)
    a.taken("j1", payload_bytes=2000)  # about 500 tokens
    assert a.load() == 500 and a.room(Lane.BULK)  # small jobs: several in one poll
    a.taken("j2", payload_bytes=40_000)  # more than the bound: counts as the bound
    assert a.load() == 1500 and not a.room(Lane.BULK)
    assert a.room(Lane.INTERACTIVE)
    a.queued("j2")
    assert a.room(Lane.BULK)
    a.ended("j1")  # ended before it queued anything (all documents unchanged)
    assert a.load() == 0


def test_a_job_slow_to_queue_stops_holding_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    a = Admission(1000, lambda: 0)
    a.taken("slow", payload_bytes=10**6)
    monkeypatch.setattr(admission_mod, "STARTING_GRACE_S", 0.0)
    assert a.room(Lane.BULK)


def test_the_default_bound_and_its_check() -> None:
    assert default_bound(2048) == 16384
    with pytest.raises(ValueError, match="max_queued_tokens must be >= 1, got 0"):
        Admission(0, lambda: 0)
