"""The job guard's decisions: which failures the queue retries and after how long, which fail
for good (dead-lettered at once), and what the last try does; and that the wrapper acts on them
(arq's ``Retry``, the dead-letter entry, the worker's list of running jobs), checked on a real
``redis-server``, or one that is stopped when Redis is down."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from arq.worker import Retry
from hypothesis import given
from hypothesis import strategies as st
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from poolq.sinks.store.errors import SinkUnavailableError, is_transient
from poolq.wire import constants
from poolq.wire.serialization import PayloadRejectedError, deserialize
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.reliability.job_guard import (
    RETRY_BACKOFF_S,
    guarded,
    is_transient_job_error,
    retry_delay,
)


def http_error(status: int) -> UnexpectedResponse:
    return UnexpectedResponse(status, "reason", b"{}", httpx.Headers())


TRANSIENT = [
    SinkUnavailableError("upsert", 4, ConnectionError("refused")),
    RedisConnectionError("redis down"),
    RedisTimeoutError("redis slow"),
    ConnectionError("refused"),
    TimeoutError("timed out"),
    httpx.ConnectError("refused"),
    http_error(503),
    http_error(429),
    ResponseHandlingException(httpx.ReadTimeout("slow")),
]
PERMANENT = [
    ValueError("bad document"),
    PayloadRejectedError("job payload is not msgpack"),
    KeyError("text"),
    TypeError("expected str"),
    RuntimeError("bug"),
    http_error(400),
    http_error(404),
]


@pytest.mark.parametrize("e", TRANSIENT, ids=lambda e: type(e).__name__)
def test_transient_errors_are_retried_with_the_backoff_of_their_try(e: BaseException) -> None:
    """(With the encode worker's classifier, the store's: ``sinks/store/errors.py``.)"""
    assert is_transient_job_error(e, is_transient)
    delays = [retry_delay(e, t, 6, is_transient) for t in range(1, 6)]
    assert delays == list(RETRY_BACKOFF_S)
    assert retry_delay(e, 6, 6, is_transient) is None  # the last try fails for good


def test_without_a_store_only_redis_and_deadlines_are_transient() -> None:
    """The parse role's guard has no store classifier (and imports no store)."""
    assert is_transient_job_error(RedisConnectionError("down"))
    assert is_transient_job_error(ConnectionError("refused"))
    assert not is_transient_job_error(SinkUnavailableError("upsert", 4, ConnectionError("x")))
    assert not is_transient_job_error(http_error(503))


@pytest.mark.parametrize("e", PERMANENT, ids=lambda e: f"{type(e).__name__}-{e}")
def test_permanent_errors_fail_at_once_even_with_tries_left(e: BaseException) -> None:
    assert not is_transient_job_error(e, is_transient)
    assert all(retry_delay(e, t, 10, is_transient) is None for t in range(1, 10))


def test_the_backoff_stays_at_its_longest_delay_past_the_table() -> None:
    e = ConnectionError()
    assert retry_delay(e, 1, 20, is_transient) == 2.0
    assert retry_delay(e, 5, 20, is_transient) == 120.0
    assert retry_delay(e, 19, 20, is_transient) == 120.0


@given(
    max_tries=st.integers(1, 30),
    job_try=st.integers(1, 40),
    e=st.sampled_from(TRANSIENT + PERMANENT),
)
def test_a_failure_is_retried_exactly_when_transient_with_tries_left(
    max_tries: int, job_try: int, e: BaseException
) -> None:
    delay = retry_delay(e, job_try, max_tries, is_transient)
    assert (delay is not None) == (is_transient_job_error(e, is_transient) and job_try < max_tries)
    if delay is not None:
        assert delay in RETRY_BACKOFF_S
        # never shorter than the delay before the previous try
        assert job_try == 1 or delay >= retry_delay(e, job_try - 1, max_tries, is_transient)


# ---------------------------------------------------------------- the wrapper, on a real Redis


def job_ctx(redis: Any, job_try: int = 1, job_id: str = "j-1") -> dict[str, Any]:
    rt = SimpleNamespace(worker_id="w-1", jobs_retried=0, jobs_failed=0)
    return {"job_id": job_id, "job_try": job_try, "redis": redis, "runtime": rt}


RUNNING = constants.WORKER_JOBS_KEY.format(worker_id="w-1")


def failing(e: BaseException):
    async def job(ctx: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        raise e

    return job


@pytest.fixture
async def redis(redis_server: LocalRedis) -> AsyncIterator[Redis]:
    r = Redis.from_url(redis_server.url)
    yield r
    await r.aclose()


async def dead_letters(redis: Redis) -> dict[str, dict[str, Any]]:
    raw = await redis.hgetall(constants.DEAD_LETTER_KEY)
    return {k.decode(): deserialize(v) for k, v in raw.items()}


async def command_calls(redis: Redis) -> dict[str, int]:
    """How many times the server ran each command since its stats were reset (failed ones too)."""
    stats = await redis.info("commandstats")
    return {k.removeprefix("cmdstat_"): v["calls"] for k, v in stats.items()}


async def test_a_job_is_listed_as_running_while_it_runs_and_not_after(redis: Redis) -> None:
    seen = []

    async def job(ctx: dict[str, Any], collection: str) -> dict[str, int]:
        seen.append(await redis.smembers(RUNNING))
        return {"points": 3}

    run = guarded(job, name="ingest", transient=is_transient, max_tries=3)
    assert await run(job_ctx(redis), "c") == {"points": 3}
    assert seen == [{b"j-1"}]
    assert await redis.smembers(RUNNING) == set()
    assert not await redis.exists(RUNNING)
    assert await dead_letters(redis) == {}


async def test_a_transient_failure_with_tries_left_becomes_a_retry(redis: Redis) -> None:
    ctx = job_ctx(redis, job_try=2)
    run = guarded(
        failing(SinkUnavailableError("upsert", 4, TimeoutError())),
        name="ingest",
        transient=is_transient,
        max_tries=3,
    )
    with pytest.raises(Retry) as info:
        await run(ctx, "c", [{"id": "d"}])
    assert info.value.defer_score == 10_000  # RETRY_BACKOFF_S[1], in ms
    assert isinstance(info.value.__cause__, SinkUnavailableError)
    assert ctx["runtime"].jobs_retried == 1 and ctx["runtime"].jobs_failed == 0
    assert await dead_letters(redis) == {}
    assert await redis.smembers(RUNNING) == set()


async def test_a_transient_failure_on_the_last_try_is_dead_lettered_and_raised(
    redis: Redis,
) -> None:
    ctx = job_ctx(redis, job_try=3)
    error = RedisConnectionError("redis down")
    run = guarded(failing(error), name="ingest", transient=is_transient, max_tries=3)
    with pytest.raises(RedisConnectionError):
        await run(ctx, "c", [{"id": "d", "text": "t"}], source="s")
    entry = (await dead_letters(redis))["j-1"]
    assert entry["function"] == "ingest"
    assert entry["args"] == ["c", [{"id": "d", "text": "t"}]]
    assert entry["kwargs"] == {"source": "s"}
    assert entry["code"] == "internal" and entry["error"].endswith(": redis down")
    assert entry["tries"] == 3
    assert ctx["runtime"].jobs_failed == 1 and ctx["runtime"].jobs_retried == 0
    assert await redis.smembers(RUNNING) == set()
    assert await redis.pttl(constants.DEAD_LETTER_KEY) == -1  # kept until dropped or retried


async def test_a_permanent_failure_is_dead_lettered_on_its_first_try(redis: Redis) -> None:
    ctx = job_ctx(redis, job_try=1)
    run = guarded(
        failing(ValueError("document 'd': no text")),
        name="ingest",
        transient=is_transient,
        max_tries=5,
    )
    with pytest.raises(ValueError, match="no text"):
        await run(ctx, "c", [])
    entries = await dead_letters(redis)
    assert list(entries) == ["j-1"]
    assert entries["j-1"]["tries"] == 1
    assert entries["j-1"]["code"] == "bad_request"
    assert entries["j-1"]["error"].endswith(": document 'd': no text")


async def test_redis_down_neither_masks_the_error_nor_the_retry(
    redis_server: LocalRedis, caplog: pytest.LogCaptureFixture
) -> None:
    redis_server.stop()  # nothing listens on its port now: every command is refused
    redis = Redis.from_url(redis_server.url, socket_connect_timeout=0.5, socket_timeout=0.5)
    try:
        with pytest.raises(RedisConnectionError):  # the real error a down Redis gives
            await redis.ping()
        run = guarded(
            failing(ValueError("bad")), name="ingest", transient=is_transient, max_tries=3
        )
        with (
            caplog.at_level(logging.ERROR, logger="poolq.jobs"),
            pytest.raises(ValueError, match="bad"),  # not the dead-letter list's ConnectionError
        ):
            await run(job_ctx(redis), "c")
        (failed,) = [r for r in caplog.records if "could not record it" in r.getMessage()]
        assert failed.exc_info is not None and isinstance(failed.exc_info[1], RedisConnectionError)
        with pytest.raises(Retry):
            await guarded(
                failing(TimeoutError()), name="ingest", transient=is_transient, max_tries=3
            )(job_ctx(redis))
    finally:
        await redis.aclose()


async def test_failing_redis_calls_are_all_tried_and_mask_nothing(redis: Redis) -> None:
    # keys of the wrong type make SADD, HSET and SREM fail on the server itself, which counts them
    await redis.set(RUNNING, b"not a set")
    await redis.set(constants.DEAD_LETTER_KEY, b"not a hash")
    await redis.config_resetstat()
    run = guarded(failing(ValueError("bad")), name="ingest", transient=is_transient, max_tries=3)
    with pytest.raises(ValueError, match="bad"):  # not the dead-letter list's ResponseError
        await run(job_ctx(redis), "c")
    calls = await command_calls(redis)
    assert (calls.get("sadd"), calls.get("hset"), calls.get("srem")) == (1, 1, 1)
    with pytest.raises(Retry):
        await guarded(failing(TimeoutError()), name="ingest", transient=is_transient, max_tries=3)(
            job_ctx(redis)
        )
    assert await redis.get(RUNNING) == b"not a set"


async def test_without_redis_or_runtime_the_decisions_are_the_same() -> None:
    with pytest.raises(Retry) as info:
        await guarded(failing(TimeoutError()), name="ingest", transient=is_transient, max_tries=2)(
            {"job_try": 1}
        )
    assert info.value.defer_score == 2_000
    with pytest.raises(TimeoutError):
        await guarded(failing(TimeoutError()), name="ingest", transient=is_transient, max_tries=2)(
            {"job_try": 2}
        )
