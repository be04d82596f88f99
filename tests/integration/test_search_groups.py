"""Search results per document, through a real worker (embedded Qdrant Edge), the client, the
sync client and the CLI: a corpus where one long document has many chunks that match the query.
The chunk-level list (``--chunks``, ``group_by=None``) is filled by that document's chunks; the
default list holds each document once, its best chunk, with its other matching chunks listed."""

import asyncio
import json
import os
import subprocess
import sys

import pytest

from poolq.ingest.client import PoolqClient, SyncPoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

pytestmark = pytest.mark.slow
COLLECTION = "manuals"
QUERY = "eruptions of the Kelud volcano in Java"
MODES = ["dense", "sparse", "hybrid", "rerank"]


def long_document() -> str:
    """A manual-length text about one volcano: many chunks, every one about its eruptions."""
    return "\n\n".join(
        f"In {1800 + 11 * i} the Kelud volcano in East Java erupted again. The eruption emptied "
        f"its crater lake, and lahars of hot mud ran down the slopes of the volcano for "
        f"{3 + i % 7} days, burying villages; it was eruption number {i + 1} in the records of "
        "Kelud, the most violent volcano of Java. Engineers later dug tunnels to drain the lake "
        "so that the next eruption of Kelud would not send its water into the valleys."
        for i in range(40)
    )


def documents():
    docs = [{"id": f"py-{i:03d}", "text": t} for i, t in enumerate(passages(40))]
    docs += [
        {"id": "manual-kelud", "text": long_document()},
        {
            "id": "note-kelud",
            "text": "Mount Kelud is a stratovolcano in East Java. Its eruptions are violent and "
            "its crater lake feeds deadly lahars.",
        },
        {"id": "note-merapi", "text": "Merapi is an active volcano in Central Java."},
    ]
    return docs


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("groups")
    with LocalRedis(tmp / "redis") as server, WorkerProcess(server.url, tmp / "qdrant"):

        async def ingest():
            async with PoolqClient(server.url) as client:
                ids = await client.enqueue(COLLECTION, documents(), job_size=20)
                outcomes = await client.wait(ids, timeout_s=600)
                assert all(o.status == "done" for o in outcomes), [o.error for o in outcomes]
                points = sum(o.result.points for o in outcomes)
                assert points >= len(documents()) + 5  # the manual has many chunks

        asyncio.run(ingest())
        yield server.url


def search(url, **kw):
    async def go():
        async with PoolqClient(url) as client:
            return await client.search(QUERY, COLLECTION, **kw)

    return asyncio.run(go())


@pytest.mark.parametrize("mode", MODES)
def test_one_manual_no_longer_fills_the_hits(url, mode):
    chunks = search(url, mode=mode, limit=5, group_by=None)
    assert chunks.group_by is None and all(h.chunks is None for h in chunks)
    manual = [h for h in chunks if h.doc_id == "manual-kelud"]
    assert len(manual) >= 3, [(h.doc_id, h.chunk_index) for h in chunks]  # the problem, as seen

    docs = search(url, mode=mode, limit=5)  # the default: per document
    assert docs.group_by == "doc_id"
    ids = [h.doc_id for h in docs]
    assert len(ids) == 5 and len(set(ids)) == 5, ids
    assert {"manual-kelud", "note-kelud"} <= set(ids[:3]), ids
    assert [h.score for h in docs] == sorted((h.score for h in docs), reverse=True)
    top = next(h for h in docs if h.doc_id == "manual-kelud")
    assert len(top.chunks) == 2  # the group size is 3: the best chunk and two others
    assert all(c.score <= top.score for c in top.chunks)
    assert len({top.chunk_index, *(c.chunk_index for c in top.chunks)}) == 3
    if mode in ("dense", "sparse"):  # a chunk's score depends on nothing else
        assert (top.id, top.score) == (manual[0].id, pytest.approx(manual[0].score, abs=1e-5))
        assert [c.id for c in top.chunks] == [h.id for h in manual[1:3]]


def test_cli_chunks_is_the_chunk_list_and_the_default_is_per_document(url):
    cmd = [sys.executable, "-m", "poolq.worker", "search", QUERY, "--collection", COLLECTION]
    common = ["--redis-url", url, "--mode", "dense", "--limit", "4"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    def run(*extra):
        out = subprocess.run(
            [*cmd, *common, *extra], capture_output=True, text=True, env=env, timeout=120
        )
        assert out.returncode == 0, out.stderr
        return out

    flat = [json.loads(x) for x in run("--json", "--chunks").stdout.splitlines()]
    expected = search(url, mode="dense", limit=4, group_by=None)
    assert [(x["id"], x["doc_id"]) for x in flat] == [(h.id, h.doc_id) for h in expected]
    assert all(
        set(x) == {"rank", "id", "score", "doc_id", "chunk_index", "text", "metadata", "citation"}
        for x in flat
    )  # fmt: skip  (the shape it always had, and the hit's citation)

    out = run("--json", "--group-size", "2")
    docs = [json.loads(x) for x in out.stdout.splitlines()]
    assert len({x["doc_id"] for x in docs}) == len(docs) == 4
    manual = next(x for x in docs if x["doc_id"] == "manual-kelud")
    assert len(manual["chunks"]) == 1
    assert set(manual["chunks"][0]) == {"id", "score", "chunk_index", "text", "citation"}
    assert "(documents)" in out.stderr

    table = run().stdout.splitlines()
    assert table[0].split()[:5] == ["#", "score", "source", "chunk", "also"]
    row = next(r for r in table if "manual-kelud" in r)
    assert len(row.split()[4].split(",")) == 2  # two other chunks, by index
    assert run("--chunks").stdout.splitlines()[0].split()[:5] == [
        "#", "score", "source", "chunk", "text"
    ]  # fmt: skip


def test_sync_client_groups_too(url):
    with SyncPoolqClient(url) as client:
        docs = client.search(QUERY, COLLECTION, mode="rerank", limit=4)
        chunks = client.search(QUERY, COLLECTION, mode="rerank", limit=4, group_by=None)
    assert len({h.doc_id for h in docs}) == 4
    assert len({h.doc_id for h in chunks}) < 4
