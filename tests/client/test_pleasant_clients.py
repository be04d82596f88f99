"""The clients read as the README writes them: ``with SyncPoolqClient(...) as client:`` closes on
exit, and a ``SearchResult`` iterates over its hits."""

from __future__ import annotations

import pytest

from poolq import SearchResult, SyncPoolqClient


def test_the_sync_client_is_a_context_manager_that_closes(redis_server):
    with SyncPoolqClient(redis_server.url) as client:
        assert client._client._redis is not None
        job_ids = client.enqueue("docs", [{"id": "d1", "text": "Qdrant stores vectors."}])
        assert len(job_ids) == 1
    assert client._client._redis is None and client._loop.is_closed()
    client.close()  # closing twice is harmless


def test_the_sync_client_closes_when_the_block_raises(redis_server):
    with pytest.raises(KeyError), SyncPoolqClient(redis_server.url) as client:
        raise KeyError("boom")
    assert client._loop.is_closed()


def test_a_search_result_iterates_over_its_hits():
    hit = {"id": "p1", "score": 0.5, "doc_id": "d1", "chunk_index": 0, "text": "t"}
    result = SearchResult.from_dict(
        {"query": "q", "collection": "c", "mode": "dense", "hits": [hit, hit | {"id": "p2"}],
         "encode_s": 0.1, "search_s": 0.1}
    )  # fmt: skip
    assert len(result) == 2 and bool(result)
    assert [h.id for h in result] == ["p1", "p2"]
    assert result[0].doc_id == "d1"
    empty = SearchResult("q", "c", "dense", [], 0.0, 0.0)
    assert len(empty) == 0 and list(empty) == []
