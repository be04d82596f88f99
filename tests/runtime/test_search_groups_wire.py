"""Grouping on the search queue: a grouped and a chunk-level request as the worker reads them,
bad grouping refused naming the key, and replies with and without ``chunks`` read by the
client. Requests and replies go through msgpack as on the wire."""

from __future__ import annotations

from typing import Any

import pytest

from poolq.wire import constants
from poolq.wire.search_results import ChunkMatch, Hit, SearchError, SearchRequest, SearchResult
from poolq.wire.serialization import deserialize, serialize
from poolq.worker.runtime.search_service import Envelope, parse_search, result_reply


def over_the_wire(request: dict[str, Any]) -> SearchRequest:
    reply_to = constants.SEARCH_REPLY_PREFIX + "r-1"
    message = {"id": "r-1", "query": "q", "request": request, "reply_to": reply_to}
    return parse_search(Envelope("r-1", reply_to, deserialize(serialize(message))))[1]


def test_a_grouped_request_keeps_its_grouping() -> None:
    sent = SearchRequest("docs", "rerank", 5, group_by="doc_id", group_size=4)
    assert over_the_wire(sent.to_dict()) == sent


def test_a_chunk_level_request_says_so() -> None:
    sent = SearchRequest("docs", "hybrid", 5, ("lang=en",), group_by=None)
    assert sent.to_dict()["group_by"] is None
    assert over_the_wire(sent.to_dict()) == sent


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"group_by": "text"}, "group_by: expected one of"),
        ({"group_by": "doc_id", "group_size": 0}, "group_size"),
        ({"group_by": "doc_id", "group_size": True}, "group_size"),
    ],
)
def test_bad_grouping_is_refused_naming_the_key(over: dict[str, Any], match: str) -> None:
    with pytest.raises(SearchError, match=match):
        over_the_wire({"collection": "docs"} | over)


def _result(group_by: str | None) -> SearchResult:
    chunks = [ChunkMatch("p-2", 0.4, 3, "more json")] if group_by else None
    hit = Hit("p-1", 0.5, "doc-1", 0, "json.loads", {"lang": "en"}, chunks)
    return SearchResult("q", "docs", "hybrid", [hit], 0.01, 0.02, "w-1", group_by)


def test_grouped_and_chunk_replies_read_back_as_sent() -> None:
    for group_by in ("doc_id", None):
        reply = deserialize(result_reply("r-1", _result(group_by)).pack())
        assert SearchResult.from_dict(reply["result"]) == _result(group_by)
    grouped = deserialize(result_reply("r-1", _result("doc_id")).pack())["result"]
    no_citation = {"source": None, "title": None, "mime": None, "page_start": None,
                   "page_end": None, "headings": []}  # fmt: skip
    assert grouped["hits"][0]["chunks"] == [
        {"id": "p-2", "score": 0.4, "chunk_index": 3, "text": "more json", "citation": no_citation}
    ]
    flat = deserialize(result_reply("r-1", _result(None)).pack())["result"]
    assert set(flat["hits"][0]) == {
        "id", "score", "doc_id", "chunk_index", "text", "metadata", "citation"
    }  # fmt: skip
