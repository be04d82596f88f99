"""A search sent to the workers through Redis (part of :mod:`poolq.ingest.client`).

With no worker alive the search is refused at once, before it is queued. Else the request goes
onto ``poolq:queue:search`` and the reply comes on a per-request list; while none has come the
client looks at the workers' heartbeats again (after the first second, then every 2 s): when
the workers have gone meanwhile it takes its request back and says so, instead of waiting out
the timeout; a live worker that is busy gets the whole timeout.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from poolq.ingest.workers_alive import NoWorkerError, no_worker_message
from poolq.wire import constants
from poolq.wire.connection import redact_url
from poolq.wire.live_workers import live_workers
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.search import SearchCall, SearchReply
from poolq.wire.search_results import SearchError, SearchRequest, SearchResult

FIRST_LOOK_S = 1.0  # a reply this fast needs no look at the heartbeats
LOOK_EVERY_S = constants.HEARTBEAT_INTERVAL_S


async def search_via_workers(
    redis: Any, redis_url: str, query: str, request: SearchRequest, timeout_s: float
) -> SearchResult:
    if not isinstance(query, str) or not query.strip():
        raise SearchError(f"query: expected a non-empty string, got {query!r}")
    call = search_call(uuid.uuid4().hex, query, request, timeout_s)
    raw = call.pack()
    deadline = time.monotonic() + timeout_s
    if not await live_workers(redis):  # (one lookup in the workers' own list: no SCAN)
        raise NoWorkerError(no_worker_message(redis_url))
    await redis.rpush(constants.SEARCH_QUEUE, raw)
    step, taken = FIRST_LOOK_S, False
    while True:
        left = deadline - time.monotonic()
        item = await redis.blpop([call.reply_to], timeout=max(0.01, min(step, left)))
        if item is not None:
            break
        if time.monotonic() >= deadline:
            await redis.lrem(constants.SEARCH_QUEUE, 1, raw)
            raise TimeoutError(
                f"no worker answered the search within {timeout_s:g}s: is a `poolq worker` "
                f"running on this Redis ({redact_url(redis_url)})?"
            )
        # a request a worker has taken is answered by it (or by the deadline) wherever it is
        if not taken and not await live_workers(redis):
            if await redis.lrem(constants.SEARCH_QUEUE, 1, raw):
                raise NoWorkerError(no_worker_message(redis_url))
            taken = True
        step = LOOK_EVERY_S
    return read_reply(item[1])


def search_call(rid: str, query: str, request: SearchRequest, timeout_s: float) -> SearchCall:
    """The call a client pushes onto the search queue (``records/search.py``)."""
    return SearchCall(
        id=rid,
        query=query,
        request=request.to_dict(),
        reply_to=constants.SEARCH_REPLY_PREFIX + rid,
        deadline=time.time() + timeout_s,
    )


def read_reply(raw: bytes) -> SearchResult:
    """The result a worker's reply holds; its error raised by code: ``bad_request`` as
    :class:`SearchError`, anything else as the worker's failure (``RuntimeError``)."""
    reply = SearchReply.unpack(raw)
    if reply.error is not None:
        if reply.error.code == ErrorCode.BAD_REQUEST:
            raise SearchError(reply.error.message)
        raise RuntimeError(
            f"search failed in the worker ({reply.error.code}): {reply.error.text()}"
        )
    assert reply.result is not None  # (SearchReply holds exactly one)
    return SearchResult.from_dict(reply.result)
