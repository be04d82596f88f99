"""Grouping on the search queue, between clients and workers of either age: what a request
without ``group_by`` means (chunks: what a client older than grouping expects), which keys a
chunk-level request carries (those an older worker accepts), and replies with and without
``chunks`` read by the client. Requests and replies go through msgpack as on the wire."""

from __future__ import annotations

from typing import Any

import pytest

from poolq.wire import constants
from poolq.wire.search_types import Chunk, Hit, SearchError, SearchRequest, SearchResult
from poolq.wire.serialization import deserialize, serialize
from poolq.worker.runtime.search_service import Envelope, parse_search, result_reply

# the request keys a worker older than grouping accepts (its SearchRequest.from_dict refuses
# any other key)
OLD_KEYS = {"collection", "mode", "limit", "filters", "score_threshold", "fusion", "candidates"}


def over_the_wire(request: dict[str, Any]) -> SearchRequest:
    reply_to = constants.SEARCH_REPLY_PREFIX + "r-1"
    message = {"id": "r-1", "query": "q", "request": request, "reply_to": reply_to}
    return parse_search(Envelope("r-1", reply_to, deserialize(serialize(message))))[1]


def test_an_old_clients_request_asks_for_chunks() -> None:
    old = {"collection": "docs", "mode": "dense", "limit": 5, "filters": [],
           "score_threshold": None, "fusion": "rrf", "candidates": None}  # fmt: skip
    request = over_the_wire(old)
    assert request.group_by is None


def test_a_grouped_request_keeps_its_grouping() -> None:
    sent = SearchRequest("docs", "rerank", 5, group_by="doc_id", group_size=4)
    assert over_the_wire(sent.to_dict()) == sent


def test_a_chunk_level_request_carries_only_the_keys_an_older_worker_accepts() -> None:
    sent = SearchRequest("docs", "hybrid", 5, ("lang=en",), group_by=None)
    assert set(sent.to_dict()) == OLD_KEYS
    assert over_the_wire(sent.to_dict()) == sent
    grouped = SearchRequest("docs", group_by="doc_id").to_dict()
    assert set(grouped) - OLD_KEYS == {"group_by", "group_size"}


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
    chunks = [Chunk("p-2", 0.4, 3, "more json")] if group_by else None
    hit = Hit("p-1", 0.5, "doc-1", 0, "json.loads", {"lang": "en"}, chunks)
    return SearchResult("q", "docs", "hybrid", [hit], 0.01, 0.02, "w-1", group_by)


def test_grouped_and_chunk_replies_read_back_as_sent() -> None:
    for group_by in ("doc_id", None):
        reply = deserialize(result_reply("r-1", _result(group_by)).pack())
        assert SearchResult.from_dict(reply["result"]) == _result(group_by)
    grouped = deserialize(result_reply("r-1", _result("doc_id")).pack())["result"]
    assert grouped["hits"][0]["chunks"] == [
        {"id": "p-2", "score": 0.4, "chunk_index": 3, "text": "more json"}
    ]
    flat = deserialize(result_reply("r-1", _result(None)).pack())["result"]
    assert set(flat["hits"][0]) == {"id", "score", "doc_id", "chunk_index", "text", "metadata"}


def test_a_reply_from_an_older_worker_reads_as_chunks() -> None:
    old = {"query": "q", "collection": "docs", "mode": "dense", "encode_s": 0.1, "search_s": 0.1,
           "worker_id": "w", "hits": [{"id": "p", "score": 1.0, "doc_id": "d", "chunk_index": 0,
                                       "text": "t", "metadata": {}}]}  # fmt: skip
    result = SearchResult.from_dict(old)
    assert result.group_by is None and result.hits[0].chunks is None
