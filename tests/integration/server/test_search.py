"""Searching over the server path as a user does: ``poolq search`` answered by the worker on
the endpoint (JSON lines, documents with their chunks, ``--chunks``), ``poolq search --direct
--qdrant-url grpc://...`` (encoded in the command, Qdrant queried over gRPC) giving the worker's
hits, and the sync client. (The rerank's MaxSim against one computed by hand is
test_search.py's, on the embedded path; test_vs_embedded.py shows both paths rank alike.)"""

from __future__ import annotations

import json

import pytest

from poolq.ingest.client import SyncPoolqClient
from tests.cli_process import poolq
from tests.integration.server.conftest import SEARCH_COLLECTION as KB
from tests.integration.server.helpers import KELUD_QUERY, NAMED, search

pytestmark = pytest.mark.slow


def hits_of(out) -> list[dict]:
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.mark.timeout(300)
def test_cli_search_through_the_worker(kb, redis_url):
    common = ["--collection", KB, "--redis-url", redis_url, "--json"]
    out = poolq("search", NAMED["whale"][1], *common, "--mode", "hybrid", "--limit", "3")
    lines = hits_of(out)
    assert [x["rank"] for x in lines] == [1, 2, 3] and lines[0]["doc_id"] == "target-whale"
    assert "mode hybrid" in out.stderr
    docs = hits_of(poolq("search", KELUD_QUERY, *common, "--mode", "dense", "--limit", "4"))
    assert len({x["doc_id"] for x in docs}) == 4
    manual = next(x for x in docs if x["doc_id"] == "manual-kelud")
    assert len(manual["chunks"]) == 2  # the best chunk and two others
    flat = hits_of(poolq("search", KELUD_QUERY, *common, "--mode", "dense", "--chunks"))
    expected = search(redis_url, KELUD_QUERY, KB, mode="dense", group_by=None)
    assert [(x["id"], x["doc_id"]) for x in flat] == [(h.id, h.doc_id) for h in expected]
    assert "chunks" not in flat[0]


@pytest.mark.timeout(180)
def test_direct_search_on_the_server_is_the_workers(kb, redis_url, endpoint):
    """One run (it loads the models): rerank, the mode with every vector and a prefetch."""
    args = ["--collection", KB, "--mode", "rerank", "--limit", "5", "--json"]
    direct = hits_of(poolq("search", KELUD_QUERY, *args, "--direct", "--qdrant-url", endpoint.url))
    worker = search(redis_url, KELUD_QUERY, KB, mode="rerank", limit=5)
    assert {x["doc_id"] for x in direct[:2]} == {"manual-kelud", "note-kelud"}
    assert [x["id"] for x in direct] == [h.id for h in worker]
    assert [x["score"] for x in direct] == pytest.approx([h.score for h in worker], rel=1e-4)
    assert [[c["id"] for c in x["chunks"]] for x in direct] == [
        [c.id for c in h.chunks] for h in worker
    ]


def test_default_mode_is_rerank_and_the_sync_client(kb, redis_url):
    with SyncPoolqClient(redis_url) as client:
        result = client.search(NAMED["bread"][1], KB, limit=3)
        sparse = client.search(NAMED["bread"][1], KB, mode="sparse", limit=3)
    assert result.mode == "rerank" and result.hits[0].doc_id == "target-bread"
    assert sparse.hits[0].doc_id == "target-bread" and sparse.search_s > 0
