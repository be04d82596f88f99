"""Reindexing over the server path: incremental by content hash (unchanged documents cost no
model work and no writes, changed ones are re-encoded, metadata-only ones updated in place,
deleted ones deleted), and a full rebuild into a new physical collection with the alias switched
on the endpoint under a loop of searches, the old collection dropped or kept (``--keep-old``).
What is stored is read back through qdrant-client."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from poolq.ingest.client import PoolqClient, SyncPoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.wire.records.reindex import ReindexSummary
from tests.audit import audit_collection
from tests.cli_process import poolq
from tests.integration.server.helpers import connect, scroll_all
from tests.integration.test_reindex import fresh_heartbeat

pytestmark = pytest.mark.slow
RX = "rx"
N_DOCS = 16


def make_docs() -> list[dict]:
    ps = passages(N_DOCS + 10)
    return [
        {
            "id": f"doc-{i:02d}",
            "text": ps[i] if i % 7 else "\n\n".join(ps[i : i + 4]),  # some multi-chunk ones
            "metadata": {"n": i, "tag": "a"},
        }
        for i in range(N_DOCS)
    ]


@pytest.fixture(scope="module")
def env(worker, workdir, endpoint):
    state = {"docs": make_docs(), "source": workdir / "rx.jsonl"}
    write(state)
    client = connect(endpoint.port)
    yield state, client
    client.close()


def write(state) -> None:
    state["source"].write_text("".join(json.dumps(d) + "\n" for d in state["docs"]))


def reindex(url: str, source, **kw) -> dict:
    async def go():
        async with PoolqClient(url) as client:
            job_id = await client.reindex(str(source), RX, **kw)
            (outcome,) = await client.wait([job_id], timeout_s=240)
            assert outcome.status == "done", outcome.error
            assert isinstance(outcome.result, ReindexSummary), outcome.result
            return outcome.result.to_wire()  # (the tests read the summary as the map it stores)

    return asyncio.run(go())


def stored(client) -> dict[str, list]:
    """doc id -> its points, by chunk index."""
    out: dict[str, list] = {}
    for p in scroll_all(client, RX, with_vectors=False):
        out.setdefault(p.payload["doc_id"], []).append(p)
    return {k: sorted(v, key=lambda p: p.payload["chunk_index"]) for k, v in out.items()}


def aliases(client) -> dict[str, str]:
    return {a.alias_name: a.collection_name for a in client.get_aliases().aliases}


@pytest.mark.timeout(240)
def test_incremental_writes_then_skips_then_re_encodes_only_the_changes(env, redis_url, worker):
    state, client = env
    r = reindex(redis_url, state["source"])
    assert (r["new"], r["changed"], r["unchanged"], r["removed"]) == (N_DOCS, 0, 0, 0)
    assert r["errors"] == [] and r["points"] == r["encoded_chunks"] > N_DOCS
    assert client.count(RX, exact=True).count == r["points"]
    assert set(stored(client)) == {d["id"] for d in state["docs"]}
    assert aliases(client)[RX].startswith(f"{RX}__")

    before = fresh_heartbeat(worker)
    r = reindex(redis_url, state["source"])
    after = fresh_heartbeat(worker)
    assert r["unchanged"] == N_DOCS
    assert (r["engine_requests"], r["write_calls"], r["points_written"]) == (0, 0, 0)
    assert after["points_written"] == before["points_written"]

    docs = state["docs"]
    changed = {"doc-00", "doc-05", "doc-10"}  # doc-00 has several chunks
    for d in docs:
        if d["id"] in changed:
            d["text"] += " This sentence was added for the reindex test."
    docs[1]["metadata"] = {"n": 1, "tag": "b"}
    gone = [d["id"] for d in docs[-2:]]
    state["docs"] = docs[:-2]
    write(state)
    r = reindex(redis_url, state["source"])
    assert (r["changed"], r["metadata_only"], r["new"], r["removed"]) == (3, 1, 0, 2)
    assert r["unchanged"] == N_DOCS - 6
    points = stored(client)
    assert set(points) == {d["id"] for d in state["docs"]}  # the deleted ones are gone
    assert r["encoded_chunks"] == sum(len(points[d]) for d in changed) == r["points"]
    for doc_id in changed:
        assert points[doc_id][-1].payload["text"].endswith("added for the reindex test.")
    assert {p.payload["metadata"]["tag"] for p in points["doc-01"]} == {"b"}
    assert {p.payload["metadata"]["tag"] for p in points["doc-02"]} == {"a"}
    assert not set(gone) & set(points)
    assert audit_collection(client, RX).problems() == []  # type: ignore[arg-type]


@pytest.mark.timeout(240)
def test_full_rebuild_switches_the_alias_under_a_search_loop(env, redis_url):
    state, client = env
    old = aliases(client)[RX]
    stop = threading.Event()
    stats: dict = {"searches": 0, "empty": 0, "errors": []}

    def loop():
        with SyncPoolqClient(redis_url) as searcher:
            while not stop.is_set():
                try:
                    result = searcher.search("read a file", RX, mode="hybrid", limit=5)
                    stats["searches"] += 1
                    stats["empty"] += not result.hits
                except Exception as e:
                    stats["errors"].append(repr(e))
                time.sleep(0.05)

    t = threading.Thread(target=loop)
    t.start()
    try:
        r = reindex(redis_url, state["source"], full=True)
        time.sleep(0.5)
    finally:
        stop.set()
        t.join(60)
    assert stats["errors"] == [] and stats["empty"] == 0 and stats["searches"] >= 3, stats
    assert r["new"] == len(state["docs"]) and r["target"].startswith(f"{RX}__")
    assert (r["switched_from"], r["dropped"]) == (old, old) and r["target"] != old
    assert aliases(client)[RX] == r["target"]
    names = {c.name for c in client.get_collections().collections}
    assert r["target"] in names and old not in names
    assert client.count(RX, exact=True).count == r["points"]
    assert audit_collection(client, RX).problems() == []  # type: ignore[arg-type]
    again = reindex(redis_url, state["source"])
    assert again["unchanged"] == len(state["docs"]) and again["engine_requests"] == 0


@pytest.mark.timeout(240)
def test_cli_full_rebuild_keeping_the_old_collection(env, redis_url):
    state, client = env
    old = aliases(client)[RX]
    out = poolq("reindex", "--source", str(state["source"]), "--collection", RX, "--full",
                "--keep-old", "--wait", "--redis-url", redis_url)  # fmt: skip
    assert out.returncode == 0, out.stderr
    n = len(state["docs"])
    new = aliases(client)[RX]
    assert f"full rebuild of '{RX}': {n} documents ({n} new," in out.stdout, out.stdout
    assert f"alias '{RX}' -> '{new}'" in out.stdout
    names = {c.name for c in client.get_collections().collections}
    assert new != old and {new, old} <= names
    assert client.count(old, exact=True).count == client.count(new, exact=True).count
    client.delete_collection(old)
