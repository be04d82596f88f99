"""Search-queue envelopes: decoding a request (as the client writes it), refusing one that
cannot be decoded or answered, dropping one whose deadline has passed, and the shape of the
success and error replies the client reads back. No models: the query service is a small class
answering with a real ``SearchResult``; the reply is pushed onto a real ``redis-server``."""

from __future__ import annotations

import asyncio
import logging
import pickle
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio import Redis

from poolq.wire import constants
from poolq.wire.search_results import Hit, SearchError, SearchRequest, SearchResult
from poolq.wire.serialization import deserialize, serialize
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.runtime.search_service import (
    Dropped,
    Envelope,
    SearchService,
    decode_request,
    error_reply,
    parse_search,
    result_reply,
)
from tests.support.redis_stats import command_calls

NOW = 1_700_000_000.0
REPLY_TO = constants.SEARCH_REPLY_PREFIX + "r-1"


def message(**over: Any) -> dict[str, Any]:
    """A request as ``PoolqClient.search`` writes it."""
    request = SearchRequest("docs", "hybrid", 5, ("lang=en",), None, "rrf", None)
    return {
        "id": "r-1",
        "query": "parse a JSON document",
        "request": request.to_dict(),
        "reply_to": REPLY_TO,
        "deadline": NOW + 30,
    } | over


def result() -> SearchResult:
    hit = Hit("p-1", 0.5, "doc-1", 0, "json.loads", {"lang": "en"})
    return SearchResult("parse a JSON document", "docs", "hybrid", [hit], 0.01, 0.02, "w-1")


def test_a_clients_request_decodes_to_its_envelope_and_search() -> None:
    env = decode_request(serialize(message()), NOW)
    assert env == Envelope("r-1", REPLY_TO, message())
    query, request = parse_search(env)
    assert query == "parse a JSON document"
    assert request == SearchRequest("docs", "hybrid", 5, ("lang=en",))


@pytest.mark.parametrize(
    "raw", [pickle.dumps(message()), b"\xc1", b"", serialize(message())[:-3], b"\x80junk"]
)
def test_an_undecodable_request_is_dropped(raw: bytes) -> None:
    out = decode_request(raw, NOW)
    assert isinstance(out, Dropped) and out.reason == "undecodable"


@pytest.mark.parametrize(
    "msg",
    [
        ["r-1", REPLY_TO],
        "hello",
        7,
        {"id": "r-1", "query": "q"},
        message(reply_to=b"x"),
        message(reply_to=None),
    ],
)
def test_a_request_without_a_reply_to_is_dropped(msg: Any) -> None:
    assert decode_request(serialize(msg), NOW) == Dropped("no_reply_to")


@pytest.mark.parametrize(
    "reply_to",
    [constants.DEAD_LETTER_KEY, constants.INGEST_QUEUE, "arq:job:x", "", "poolq:search:"],
)
def test_a_reply_to_outside_the_reply_prefix_is_dropped(reply_to: str) -> None:
    # the worker must not push onto a key a request chooses (its own queues, arq's keys)
    assert decode_request(serialize(message(reply_to=reply_to)), NOW) == Dropped("foreign_reply_to")


def test_the_deadline_is_checked_after_the_reply_to() -> None:
    msg = message(reply_to="poolq:jobs", deadline=NOW - 1)
    assert decode_request(serialize(msg), NOW) == Dropped("foreign_reply_to")


@pytest.mark.parametrize(
    "deadline, expired",
    [
        (NOW - 0.001, True),
        (NOW - 3600, True),
        (int(NOW) - 1, True),
        (NOW, False),  # still in time at the deadline itself
        (NOW + 0.001, False),
        (None, False),  # no deadline: never expires
        ("soon", False),
    ],
)
def test_deadline_expiry(deadline: Any, expired: bool) -> None:
    out = decode_request(serialize(message(deadline=deadline)), NOW)
    assert (out == Dropped("expired")) == expired
    assert expired or isinstance(out, Envelope)


@given(deadline=st.floats(-1e10, 1e10), now=st.floats(-1e10, 1e10))
def test_a_request_expires_exactly_when_now_is_past_its_deadline(
    deadline: float, now: float
) -> None:
    out = decode_request(serialize(message(deadline=deadline)), now)
    assert isinstance(out, Dropped if now > deadline else Envelope)


@pytest.mark.parametrize(
    "over, match",
    [
        ({"query": None}, "^search call: query: expected a string, got None$"),
        ({"query": ["q"]}, "^search call: query: expected a string, got list$"),
        ({"request": None}, "^search call: request: expected a map, got None$"),
        ({"request": {}}, "search request:"),  # no collection
        ({"request": {"collection": "docs", "limit": 0}}, "limit"),
        ({"request": {"collection": "docs", "mode": "fuzzy"}}, "mode"),
        ({"request": {"collection": "docs", "shards": 2}}, "unknown keys"),
        ({"request": "docs"}, "expected a map"),
    ],
)
def test_a_malformed_search_is_a_search_error(over: dict[str, Any], match: str) -> None:
    env = decode_request(serialize(message(**over)), NOW)
    assert isinstance(env, Envelope)
    with pytest.raises(SearchError, match=match):
        parse_search(env)


def test_the_replies_have_the_shape_the_client_reads() -> None:
    ok = deserialize(result_reply("r-1", result()).pack())
    assert set(ok) == {"id", "result"} and ok["id"] == "r-1"
    assert SearchResult.from_dict(ok["result"]) == result()
    err = deserialize(error_reply("r-1", SearchError("no collection 'docs'")).pack())
    assert err == {
        "id": "r-1",
        "error": {"code": "bad_request", "type": "SearchError", "message": "no collection 'docs'"},
    }


# ---------------------------------------------------------------- the service


class Queries:
    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error
        self.calls: list[tuple[str, SearchRequest]] = []

    async def search(self, query: str, request: SearchRequest) -> SearchResult:
        self.calls.append((query, request))
        if self.error is not None:
            raise self.error
        return result()


def live(**over: Any) -> bytes:
    """A request in time for the service, which reads the clock."""
    return serialize(message(deadline=time.time() + 30) | over)


def service(queries: Queries) -> SearchService:
    return SearchService("redis://unused", queries)  # type: ignore[arg-type]


async def test_the_service_answers_a_search() -> None:
    queries = Queries()
    svc = service(queries)
    reply_to, reply = await svc._answer(live())
    assert reply_to == REPLY_TO
    assert reply == result_reply("r-1", result())
    assert queries.calls == [
        ("parse a JSON document", SearchRequest("docs", "hybrid", 5, ("lang=en",)))
    ]


@pytest.mark.parametrize(
    "error, logged, code",
    [
        (SearchError("no collection 'docs'"), False, "bad_request"),
        (RuntimeError("qdrant exploded"), True, "internal"),
    ],
)
async def test_a_failed_search_is_answered_with_its_error(
    error: BaseException, logged: bool, code: str, caplog: pytest.LogCaptureFixture
) -> None:
    svc = service(Queries(error))
    with caplog.at_level(logging.WARNING, logger="poolq.search"):
        reply_to, reply = await svc._answer(live())
    assert reply_to == REPLY_TO
    assert reply is not None and reply.to_wire() == {
        "id": "r-1",
        "error": {"code": code, "type": type(error).__name__, "message": str(error)},
    }
    assert ("search r-1 failed" in caplog.text) == logged  # bad requests are not worth a warning
    assert svc.bad_requests == 0 and svc.dropped_expired == 0


async def test_a_malformed_search_is_answered_without_searching() -> None:
    queries = Queries()
    _, reply = await service(queries)._answer(live(query=3))
    assert reply is not None and reply.error is not None and queries.calls == []
    assert (reply.error.type, reply.error.code) == ("SearchError", "bad_request")


@pytest.mark.parametrize(
    "raw, bad, expired",
    [
        (b"\xc1", 1, 0),
        (serialize({"id": "x"}), 1, 0),
        (live(reply_to="poolq:dlq"), 1, 0),
        (serialize(message(deadline=1.0)), 0, 1),
    ],
)
async def test_dropped_requests_are_counted_and_never_searched(
    raw: bytes, bad: int, expired: int
) -> None:
    queries = Queries()
    svc = service(queries)
    assert await svc._answer(raw) == (None, None)
    assert (svc.bad_requests, svc.dropped_expired) == (bad, expired)
    assert queries.calls == []


async def test_the_reply_is_pushed_onto_reply_to_which_expires(redis_server: LocalRedis) -> None:
    redis, slots = Redis.from_url(redis_server.url), asyncio.Semaphore(1)
    svc = SearchService(redis_server.url, Queries())  # type: ignore[arg-type]
    try:
        await redis.config_resetstat()
        await slots.acquire()
        await svc._handle(redis, live(), slots)
        replies = [deserialize(v) for v in await redis.lrange(REPLY_TO, 0, -1)]
        assert replies == [result_reply("r-1", result()).to_wire()]
        full_ms = constants.SEARCH_REPLY_TTL_S * 1000
        assert full_ms - 5000 < await redis.pttl(REPLY_TO) <= full_ms  # real, counting down
        calls = await command_calls(redis)
        assert (calls.get("rpush"), calls.get("expire")) == (1, 1)
        assert "multi" not in calls and "exec" not in calls  # a plain pipeline, no transaction
        assert not slots.locked()  # its slot is given back
        await slots.acquire()
        await svc._handle(redis, b"\xc1", slots)  # nothing pushed for a dropped one
        assert await redis.keys("*") == [REPLY_TO.encode()]
        assert await redis.llen(REPLY_TO) == 1 and not slots.locked()
    finally:
        await redis.aclose()
