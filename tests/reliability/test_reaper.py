"""The reaper's decisions, from plain inputs: which jobs of dead workers are handed back, which
orphaned in-progress marks (no live worker lists them) are, once older than the grace period and
still queued, and which jobs died on their last try and go to the dead-letter list. The Redis
wrappers that act on them are checked against a real ``redis-server`` (the ``redis_server``
fixture), by the state they leave there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from arq.constants import in_progress_key_prefix, job_key_prefix, retry_key_prefix
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio import Redis

from poolq.wire import constants
from poolq.wire.serialization import deserialize, serialize
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.reliability.reap_decisions import (
    ORPHAN_GRACE_S,
    LastTry,
    Mark,
    WorkerJobs,
    dead_workers,
    last_try,
    orphaned_marks,
    worker_id_of,
)
from poolq.worker.reliability.reaper import reap_dead_workers, reap_orphans

TTL_MS = 3_600_000  # arq's in-progress timeout: a mark set s seconds ago has TTL_MS - 1000 s left
Q = constants.INGEST_QUEUE


def marked(job_id: str, seconds_ago: float, queued: bool = True) -> Mark:
    return Mark(job_id, queued, int(TTL_MS - seconds_ago * 1000))


def alive(worker_id: str, *jobs: str) -> WorkerJobs:
    return WorkerJobs(worker_id, True, frozenset(jobs))


def dead(worker_id: str, *jobs: str) -> WorkerJobs:
    return WorkerJobs(worker_id, False, frozenset(jobs))


def job_payload(function: str = "ingest") -> bytes:
    return serialize({"f": function, "a": ["c", [{"id": "d"}]], "k": {"s": 1}, "t": 1, "et": 0})


# ---------------------------------------------------------------- dead workers


def test_only_workers_without_a_heartbeat_are_reaped() -> None:
    lists = [alive("a", "j1"), dead("b", "j2", "j3"), dead("c"), alive("d")]
    assert dead_workers(lists) == [dead("b", "j2", "j3"), dead("c")]
    assert dead_workers([alive("a", "j1")]) == []


def test_the_worker_id_is_read_from_its_jobs_key() -> None:
    key = constants.WORKER_JOBS_KEY.format(worker_id="host-1:42:ab")
    assert worker_id_of(key) == "host-1:42:ab"


# ---------------------------------------------------------------- orphaned marks


def test_an_old_mark_of_a_queued_job_no_live_worker_lists_is_handed_back() -> None:
    assert orphaned_marks([marked("j", 40)], [], TTL_MS, grace_s=30) == ["j"]


@pytest.mark.parametrize(
    "mark, lists",
    [
        (marked("j", 40), [alive("w", "j")]),  # a live worker runs it
        (marked("j", 29), []),  # younger than the grace period
        (marked("j", 40, queued=False), []),  # finished (arq keeps marks of unique cron jobs)
        (Mark("j", True, -1), []),  # a mark without an expiry is not arq's
        (Mark("j", True, -2), []),  # gone since it was listed
        (Mark("j", True, 0), []),
    ],
    ids=["live", "fresh", "finished", "no-expiry", "gone", "expiring"],
)
def test_marks_that_are_left_alone(mark: Mark, lists: list[WorkerJobs]) -> None:
    assert orphaned_marks([mark], lists, TTL_MS, grace_s=30) == []


def test_a_mark_exactly_as_old_as_the_grace_period_is_handed_back() -> None:
    assert orphaned_marks([marked("j", 30)], [], TTL_MS, grace_s=30) == ["j"]
    assert orphaned_marks([marked("j", 29.999)], [], TTL_MS, grace_s=30) == []


def test_a_job_listed_only_by_a_dead_worker_is_an_orphan() -> None:
    lists = [dead("gone", "j"), alive("w", "other")]
    assert orphaned_marks([marked("j", 40), marked("other", 40)], lists, TTL_MS, 30) == ["j"]


def test_the_default_grace_period_is_long_enough_to_register() -> None:
    assert ORPHAN_GRACE_S >= 10 * constants.REAP_INTERVAL_S
    assert orphaned_marks([marked("j", ORPHAN_GRACE_S - 1)], [], TTL_MS) == []


ages = st.floats(0, TTL_MS / 1000 - 1, allow_nan=False)


@given(age=ages, older=ages, grace=st.floats(0, 600), queued=st.booleans(), listed=st.booleans())
def test_orphan_decisions_are_monotonic_in_age(
    age: float, older: float, grace: float, queued: bool, listed: bool
) -> None:
    lists = [alive("w", "j")] if listed else []
    handed = orphaned_marks([marked("j", age, queued)], lists, TTL_MS, grace)
    if handed:  # only queued jobs no live worker lists; an older mark is handed back too
        assert queued and not listed
        assert orphaned_marks([marked("j", max(age, older), queued)], [], TTL_MS, grace)
    elif queued and not listed:
        assert age < grace + 0.001


@given(
    st.lists(st.tuples(st.sampled_from("abcdef"), ages, st.booleans()), max_size=8),
    st.sets(st.sampled_from("abcdef")),
)
def test_a_live_worker_listing_a_job_always_protects_it(
    marks: list[tuple[str, float, bool]], listed: set[str]
) -> None:
    handed = orphaned_marks(
        [marked(j, a, q) for j, a, q in marks], [alive("w", *listed)], TTL_MS, grace_s=0
    )
    assert not set(handed) & listed
    assert set(handed) <= {j for j, _, q in marks if q}


# ---------------------------------------------------------------- last tries


@pytest.mark.parametrize(
    "raw_try, max_tries, expected",
    [
        (b"3", {"ingest": 3}, 3),  # its last try
        (b"4", {"ingest": 3}, 4),  # past it (a reaped try was counted again)
        (b"2", {"ingest": 3}, None),  # tries left: arq runs it again
        (b"3", {"reindex": 3}, None),  # no limit known for its function
        (b"1", {"ingest": 1}, 1),
    ],
)
def test_a_job_dead_lettered_exactly_on_its_last_try(
    raw_try: bytes, max_tries: dict[str, int], expected: int | None
) -> None:
    out = last_try(raw_try, job_payload(), max_tries)
    if expected is None:
        assert out is None
    else:
        assert out == LastTry("ingest", ["c", [{"id": "d"}]], {"s": 1}, expected)


@pytest.mark.parametrize(
    "raw_try, raw_job",
    [
        (None, job_payload()),  # never started by arq
        (b"3", None),  # the job is gone (finished and expired)
        (b"three", job_payload()),
        (b"3", b"\xc1garbage"),
        (b"3", serialize({"f": "ingest"})),  # not a whole job
    ],
)
def test_an_unreadable_job_is_not_dead_lettered(
    raw_try: bytes | None, raw_job: bytes | None
) -> None:
    assert last_try(raw_try, raw_job, {"ingest": 3}) is None


# ---------------------------------------------------------------- the Redis wrappers


@pytest.fixture
async def r(redis_server: LocalRedis) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


async def worker(r: Redis, worker_id: str, *jobs: str, live: bool) -> None:
    if live:
        await r.set(constants.HEARTBEAT_KEY.format(worker_id=worker_id), b"{}", ex=60)
    if jobs:
        await r.sadd(constants.WORKER_JOBS_KEY.format(worker_id=worker_id), *jobs)


async def dead_letters(r: Redis) -> dict[str, dict[str, Any]]:
    raw = await r.hgetall(constants.DEAD_LETTER_KEY)
    return {k.decode(): deserialize(v) for k, v in raw.items()}


async def marked_ago(r: Redis, job_id: str) -> float:
    """How long ago, in seconds, arq would have set the job's mark (from its real PTTL)."""
    ttl_ms = await r.pttl(in_progress_key_prefix + job_id)
    assert ttl_ms > 0, f"{job_id}: its mark is gone or has no expiry ({ttl_ms})"
    return (TTL_MS - ttl_ms) / 1000


async def test_reap_dead_workers_hands_back_marks_and_dead_letters_last_tries(r: Redis) -> None:
    await worker(r, "alive", "j-live", live=True)
    await worker(r, "dead", "j-dead", "j-last", "j-done", live=False)
    for j in ("j-live", "j-dead", "j-last"):  # j-done finished: its mark is gone
        await r.psetex(in_progress_key_prefix + j, TTL_MS, b"1")
        await r.set(job_key_prefix + j, job_payload())
    await r.set(retry_key_prefix + "j-dead", b"1")
    await r.set(retry_key_prefix + "j-last", b"2")

    assert sorted(await reap_dead_workers(r, {"ingest": 2})) == ["j-dead", "j-last"]
    assert await r.exists(in_progress_key_prefix + "j-live")
    assert await marked_ago(r, "j-live") < 5  # left as it was, expiry included
    for j in ("j-dead", "j-last"):
        assert not await r.exists(in_progress_key_prefix + j)
        assert await r.exists(job_key_prefix + j)  # still queued: the next poll runs it again
    assert not await r.exists(constants.WORKER_JOBS_KEY.format(worker_id="dead"))
    assert await r.smembers(constants.WORKER_JOBS_KEY.format(worker_id="alive")) == {b"j-live"}
    entries = await dead_letters(r)
    assert list(entries) == ["j-last"]
    assert entries["j-last"]["error"] == (
        "WorkerDied: worker dead died during the job's last try (2)"
    )
    assert await reap_dead_workers(r, {"ingest": 2}) == []  # nothing left to do


async def test_reap_orphans_hands_back_only_old_unlisted_queued_marks(r: Redis) -> None:
    await worker(r, "alive", "listed", live=True)
    await worker(r, "dead", "of-dead", live=False)
    await r.zadd(Q, {j: 1.0 for j in ("old", "fresh", "listed", "of-dead", "last")})
    for j, age_s in (("old", 40), ("fresh", 1), ("listed", 40), ("of-dead", 40), ("done", 40)):
        await r.psetex(in_progress_key_prefix + j, TTL_MS - age_s * 1000, b"1")
    await r.psetex(in_progress_key_prefix + "last", TTL_MS - 40_000, b"1")
    await r.set(retry_key_prefix + "last", b"3")
    await r.set(job_key_prefix + "last", job_payload())
    left_alone = ("fresh", 1), ("listed", 40), ("done", 40)
    before = {j: await marked_ago(r, j) for j, _ in left_alone}

    handed = await reap_orphans(r, Q, TTL_MS, {"ingest": 3}, grace_s=30)
    assert sorted(handed) == ["last", "of-dead", "old"]
    for j in handed:
        assert not await r.exists(in_progress_key_prefix + j)
    # the marks left alone keep their expiry (real PTTL): as old as they were made, and no
    # younger after the reaper than before it (a mark set again would be younger)
    for j, age_s in left_alone:
        assert age_s <= before[j] <= await marked_ago(r, j), j
    assert await r.zcard(Q) == 5  # handing back leaves every job queued
    (entry,) = (await dead_letters(r)).values()
    assert entry["job_id"] == "last"
    assert entry["error"] == "WorkerDied: worker (unknown) died during the job's last try (3)"
