"""Searches answered by the worker through Redis, on a queue of their own.

In embedded mode only the worker may open the Qdrant folder, so clients cannot query it
themselves: they push a request onto the ``SEARCH_QUEUE`` list and wait on a reply key. Each
request goes to exactly one worker (``BLPOP``); it is not an arq job, so it never waits behind
the ingestion queue or arq's polling, and its query is encoded ahead of ingestion.

Request: a :class:`~poolq.wire.records.search.SearchCall`; reply, pushed onto
``reply_to`` (which expires after ``SEARCH_REPLY_TTL_S``): a ``SearchReply`` holding the
result, or an ``ErrorRecord`` whose ``code`` tells the client what it means.

A request whose deadline has passed is dropped unanswered (its client has given up).

Grouping: ``request`` holds ``"group_by": "doc_id"`` (and ``"group_size"``) for one hit per
document, each hit with ``"chunks"`` (its other matching chunks), or ``"group_by": null`` for
the chunks themselves (hits without ``"chunks"``); the result says ``"group_by"``.

Filters are checked against the collection's fields before the query is encoded
(``collection_fields.py``): a key no document has, or a range on a field holding no numbers, is
refused with a :class:`SearchError` naming it and the known fields, instead of matching nothing.
A field the registry lacks is looked up in the store first (written before the registry, say):
found, it is added to the registry and the search runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from poolq.sinks.inventory import MISSING
from poolq.wire import constants
from poolq.wire.filters import parse_conditions
from poolq.wire.records.errors import ErrorRecord
from poolq.wire.records.record import WireError
from poolq.wire.records.search import SearchCall, SearchReply
from poolq.wire.search_results import SearchError, SearchRequest, SearchResult
from poolq.wire.serialization import deserialize
from poolq.worker.runtime.collection_fields import (
    filter_problem,
    metadata_fields,
    read_fields,
    record_fields,
)

if TYPE_CHECKING:
    from poolq.worker.runtime.query import QueryService

log = logging.getLogger("poolq.search")


@dataclass(frozen=True)
class Envelope:
    """A request that has someone to answer: its ``id`` and ``reply_to``, and the whole
    ``message`` as it came (checked as a ``SearchCall`` by :func:`parse_search`)."""

    id: Any
    reply_to: str
    message: dict[str, Any]


@dataclass(frozen=True)
class Dropped:
    """A request dropped unanswered: ``expired`` (its client has given up), or a bad one
    (``undecodable``, ``no_reply_to``, ``foreign_reply_to``: no one to answer)."""

    reason: Literal["undecodable", "no_reply_to", "foreign_reply_to", "expired"]
    detail: str = ""


def decode_request(raw: bytes, now: float) -> Envelope | Dropped:
    """A request off the search queue, or why it is dropped (``now``: epoch seconds)."""
    try:
        msg = deserialize(raw)
    except Exception as e:  # not msgpack (or a pickle): refused, and no one to answer
        return Dropped("undecodable", str(e))
    if not isinstance(msg, dict) or not isinstance(msg.get("reply_to"), str):
        return Dropped("no_reply_to")
    reply_to: str = msg["reply_to"]
    if not reply_to.startswith(constants.SEARCH_REPLY_PREFIX):
        return Dropped("foreign_reply_to")
    deadline = msg.get("deadline")
    if isinstance(deadline, int | float) and now > deadline:
        return Dropped("expired")
    return Envelope(msg.get("id"), reply_to, msg)


def parse_search(envelope: Envelope) -> tuple[str, SearchRequest]:
    """The query text and request to run; :class:`SearchError` for a malformed one."""
    try:
        call = SearchCall.from_wire(envelope.message)
    except WireError as e:
        raise SearchError(str(e)) from None
    return call.query, SearchRequest.from_dict(call.request)


def result_reply(rid: Any, result: SearchResult) -> SearchReply:
    return SearchReply(rid, result=result.to_dict())


def error_reply(rid: Any, e: BaseException) -> SearchReply:
    """The error ``e`` as the client reads it: its code decides (``records/codes.py``)."""
    return SearchReply(rid, error=ErrorRecord.of(e))


class SearchService:
    def __init__(self, redis_url: str, queries: QueryService, *, concurrency: int = 8) -> None:
        self.redis_url = redis_url
        self.queries = queries
        self.concurrency = concurrency
        self.dropped_expired = 0
        self.bad_requests = 0
        self._task: asyncio.Task[None] | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._serve(), name="poolq-search-service")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._handlers:
            await asyncio.wait(set(self._handlers), timeout=10)

    async def _serve(self) -> None:
        slots = asyncio.Semaphore(self.concurrency)
        backoff_s = 0.1
        while True:
            redis = Redis.from_url(self.redis_url)
            try:
                while True:
                    await slots.acquire()
                    try:
                        item = await redis.blpop([constants.SEARCH_QUEUE], timeout=1)
                    except BaseException:
                        slots.release()
                        raise
                    if item is None:
                        slots.release()
                        continue
                    backoff_s = 0.1
                    task = asyncio.create_task(self._handle(redis, item[1], slots))
                    self._handlers.add(task)
                    task.add_done_callback(self._handlers.discard)
            except (RedisConnectionError, RedisTimeoutError, OSError) as e:
                # Redis restarting: reconnect with backoff, keep serving
                log.warning("search queue: redis unavailable (%s); retrying in %.1fs", e, backoff_s)
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, 5.0)
            finally:
                with contextlib.suppress(Exception):
                    await redis.aclose()

    async def _handle(self, redis: Redis, raw: bytes, slots: asyncio.Semaphore) -> None:
        try:
            reply_to, reply = await self._answer(raw, redis)
            if reply_to is not None and reply is not None:
                with contextlib.suppress(RedisConnectionError, RedisTimeoutError, OSError):
                    async with redis.pipeline(transaction=False) as pipe:
                        pipe.rpush(reply_to, reply.pack())
                        pipe.expire(reply_to, constants.SEARCH_REPLY_TTL_S)
                        await pipe.execute()
        except Exception:  # never let one request take the service down
            log.exception("search request failed unexpectedly")
        finally:
            slots.release()

    async def check_filters(self, redis: Redis, request: SearchRequest) -> None:
        """Refuse (:class:`SearchError`) a filter that can match nothing in the collection."""
        if not request.filters:
            return
        conditions = parse_conditions(request.filters)
        fields = await read_fields(redis, request.collection)
        for expr, condition in zip(request.filters, conditions, strict=True):
            problem = filter_problem(expr, condition, fields)
            if problem is None or (problem.metadata and not fields):
                continue  # no registry (a collection written before it existed): no refusal
            if problem.metadata:  # the registry may lack it: ask the store before refusing
                value = await self.queries.stored_value(request.collection, condition)
                if value is not MISSING:
                    found = metadata_fields([{problem.field: value}])
                    with contextlib.suppress(Exception):
                        await record_fields(redis, request.collection, found)
                    for key, types in found.items():
                        fields.setdefault(key, set()).update(types)
                    continue
            elif (missing := await self.queries.missing_collection(request.collection)) is not None:
                raise missing
            raise SearchError(problem.message(request.collection, fields))

    async def _answer(
        self, raw: bytes, redis: Redis | None = None
    ) -> tuple[str | None, SearchReply | None]:
        envelope = decode_request(raw, time.time())
        if isinstance(envelope, Dropped):
            if envelope.reason == "expired":
                self.dropped_expired += 1
                return None, None
            self.bad_requests += 1
            if envelope.reason == "undecodable":
                log.warning("search queue: undecodable request dropped: %s", envelope.detail)
            elif envelope.reason == "no_reply_to":
                log.warning("search queue: request without reply_to dropped")
            else:
                log.warning(
                    "search queue: reply_to outside %s dropped", constants.SEARCH_REPLY_PREFIX
                )
            return None, None
        try:
            query, request = parse_search(envelope)
            if redis is not None:
                await self.check_filters(redis, request)
            result = await self.queries.search(query, request)
        except Exception as e:
            if not isinstance(e, ValueError):
                log.warning("search %s failed: %s", envelope.id, e)
            return envelope.reply_to, error_reply(envelope.id, e)
        return envelope.reply_to, result_reply(envelope.id, result)
