"""Shared by the server-path integration tests: the corpus, the client calls, reading the
endpoint back through qdrant-client, and comparing two searches' hits."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from qdrant_client import QdrantClient

from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from tests.integration import test_search_groups as groups
from tests.integration.test_search import TARGETS

KELUD_QUERY = groups.QUERY  # many chunks of the manual match it
MODES = ["dense", "sparse", "hybrid", "rerank"]
# test_search's documents named by a query, less the volcano, which the Kelud notes rival here
NAMED = {k: v for k, v in TARGETS.items() if k != "volcano"}


def search_corpus(n_passages: int = 40) -> list[dict[str, Any]]:
    """test_search's targets beside standard-library passages, and test_search_groups' long
    manual (many chunks about one volcano) with a short note on it: ~70 points."""
    docs = [
        {"id": f"py-{i:03d}", "text": t, "metadata": {"n": i, "kind": "python", "lang": "en"}}
        for i, t in enumerate(passages(n_passages))
    ]
    for k, (name, (text, _)) in enumerate(NAMED.items()):
        meta = {"n": 1000 + k, "kind": "target", "lang": "en" if k % 2 else "de"}
        docs.append({"id": f"target-{name}", "text": text, "metadata": meta})
    docs.append(
        {"id": "manual-kelud", "text": groups.long_document(), "metadata": {"kind": "manual"}}
    )
    docs.append(
        {
            "id": "note-kelud",
            "text": "Mount Kelud is a stratovolcano in East Java. Its eruptions are violent and "
            "its crater lake feeds deadly lahars.",
            "metadata": {"kind": "note"},
        }
    )
    return docs


def connect(port: int) -> QdrantClient:
    """qdrant-client on the endpoint, over gRPC, as on a Qdrant server."""
    return QdrantClient(
        host="127.0.0.1", grpc_port=port, prefer_grpc=True, check_compatibility=False
    )


def enqueue_wait(url: str, collection: str, docs: list[dict], job_size: int = 20, **kw: Any):
    """Enqueue ``docs`` with the client and wait for every job: the outcomes."""

    async def go() -> list:
        async with PoolqClient(url) as client:
            ids = await client.enqueue(collection, docs, job_size=job_size, **kw)
            return await client.wait(ids, timeout_s=300)

    return asyncio.run(go())


def ingest(url: str, collection: str, docs: list[dict], job_size: int = 20, **kw: Any) -> list:
    """:func:`enqueue_wait`, every job checked done."""
    outcomes = enqueue_wait(url, collection, docs, job_size, **kw)
    assert all(o.status == "done" for o in outcomes), [(o.status, o.error) for o in outcomes]
    return outcomes


def search(url: str, query: str, collection: str, **kw: Any):
    async def go():
        async with PoolqClient(url) as client:
            return await client.search(query, collection, **kw)

    return asyncio.run(go())


def scroll_all(client: QdrantClient, collection: str, with_vectors: Any = True) -> list:
    points, offset = [], None
    while True:
        batch, offset = client.scroll(
            collection, limit=256, offset=offset, with_payload=True, with_vectors=with_vectors
        )
        points.extend(batch)
        if offset is None:
            return points


def assert_same_hits(got: list, expected: list, tol: float = 1e-4) -> None:
    """The same hits in the same order with scores within ``tol`` (relative for large scores);
    hits whose scores tie (within ``tol``) may come in either order, and the last tie may be
    cut by the limit at a different hit. Grouped hits: their chunks compared the same way."""
    assert len(got) == len(expected), (_show(got), _show(expected))
    for g, e in zip(got, expected, strict=True):
        assert g.score == pytest.approx(e.score, rel=tol, abs=tol), (_show(got), _show(expected))
    blocks: list[list[int]] = []
    for i, h in enumerate(expected):
        if blocks and expected[blocks[-1][0]].score == pytest.approx(h.score, rel=tol, abs=tol):
            blocks[-1].append(i)
        else:
            blocks.append([i])
    for n, block in enumerate(blocks):
        ids_got = {got[i].id for i in block}
        ids_expected = {expected[i].id for i in block}
        if n < len(blocks) - 1:
            assert ids_got == ids_expected, (_show(got), _show(expected))
        if len(block) == 1:
            g, e = got[block[0]], expected[block[0]]
            assert _fields(g) == _fields(e), (_show(got), _show(expected))
            if getattr(e, "chunks", None) is not None:
                assert g.chunks is not None
                assert_same_hits(g.chunks, e.chunks, tol)


def _fields(h: Any) -> tuple:
    return tuple(getattr(h, f, None) for f in ("doc_id", "chunk_index", "text", "metadata"))


def _show(hits: list) -> list[tuple]:
    return [(h.doc_id, getattr(h, "chunk_index", None), round(h.score, 5)) for h in hits]
