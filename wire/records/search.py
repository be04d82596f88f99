"""A search through Redis: the call a client pushes onto ``SEARCH_QUEUE`` and the reply a
worker pushes onto the call's ``reply_to`` list (``ingest/search_call.py`` writes the call and
reads the reply; ``worker/runtime/search_service.py`` the other way round)::

    call:  {"id", "query", "request": SearchRequest.to_dict(), "reply_to", "deadline"}
    reply: {"id", "result": SearchResult.to_dict()}  or  {"id", "error": ErrorRecord}

``request`` and ``result`` are the maps of ``wire/search_results.py``, which own their own
encoding and checks (this layer is below the sinks: it holds them as maps). The client decides
what an error means by its ``code``: ``bad_request`` is a :class:`SearchError`, anything else
the worker's failure. An error without a code is no reply (:class:`WireError` naming the
field)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from poolq.wire.records.errors import ErrorRecord
from poolq.wire.records.record import WireError, WireRecord


@dataclass(frozen=True)
class SearchCall(WireRecord):
    """``deadline``: epoch seconds after which the client has given up (None: never)."""

    wire_name = "search call"

    id: str
    query: str
    request: dict[str, Any]
    reply_to: str
    deadline: float | None = None


@dataclass(frozen=True)
class SearchReply(WireRecord):
    """Exactly one of ``result`` and ``error``. ``id``: the call's, as it came."""

    wire_name = "search reply"

    id: Any
    result: dict[str, Any] | None = None
    error: ErrorRecord | None = None

    @classmethod
    def from_wire(cls, data: Any, *, strict: bool = False) -> Self:
        reply = super().from_wire(data, strict=strict)
        if (reply.result is None) == (reply.error is None):
            raise WireError(f"{cls.wire_name}: expected exactly one of result and error")
        return reply
