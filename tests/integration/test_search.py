"""Searching a collection ingested by a real worker, through the worker (embedded Qdrant): every
mode, filters, the rerank order against MaxSim by hand, the CLI and the sync client."""

import asyncio
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from poolq.ingest.client import PoolqClient, SyncPoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.sinks.store.edge import EdgeStore
from poolq.wire.constants import SEARCH_QUEUE
from poolq.wire.search_results import SearchError
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.models import minilm_path
from tests.support.maxsim import maxsim
from tests.support.redis_stats import command_calls

pytestmark = pytest.mark.slow
COLLECTION = "kb"

# Documents about things the standard-library docstrings never mention, and queries that name
# them unambiguously (paraphrased, sharing the key words).
TARGETS = {
    "volcano": (
        "Mount Kelud is a stratovolcano in East Java. Its crater lake makes its eruptions "
        "violent, and the lahars that follow them have destroyed villages on its slopes.",
        "eruptions of the Kelud volcano in Java",
    ),
    "bread": (
        "A sourdough starter is a culture of wild yeast and lactobacilli kept in flour and "
        "water. Bakers feed it daily and use it to leaven bread with a sour taste.",
        "how to feed a sourdough starter for baking bread",
    ),
    "chess": (
        "The Sicilian Defence is a chess opening that begins 1.e4 c5. Black fights for the "
        "centre from the side and gets an unbalanced game with chances for both players.",
        "Sicilian Defence chess opening",
    ),
    "whale": (
        "Humpback whales migrate thousands of kilometres between polar feeding grounds and "
        "tropical breeding waters, where the males sing long, complex songs.",
        "songs of migrating humpback whales",
    ),
    "tea": (
        "Matcha is a finely ground powder of green tea leaves grown in the shade. It is "
        "whisked with hot water in the Japanese tea ceremony.",
        "Japanese tea ceremony matcha powder",
    ),
}
MODES = ["dense", "sparse", "hybrid", "rerank"]


def documents():
    docs = [
        {"id": f"py-{i:03d}", "text": t, "metadata": {"n": i, "kind": "python", "lang": "en"}}
        for i, t in enumerate(passages(150))
    ]
    for k, (name, (text, _)) in enumerate(TARGETS.items()):
        docs.append(
            {
                "id": f"target-{name}",
                "text": text,
                "metadata": {"n": 1000 + k, "kind": "target", "lang": "en" if k % 2 else "de"},
            }
        )
    return docs


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("search")
    server = LocalRedis(tmp / "redis").start()
    worker = WorkerProcess(server.url, tmp / "qdrant").start()

    async def ingest():
        async with PoolqClient(server.url) as client:
            ids = await client.enqueue(COLLECTION, documents(), job_size=40)
            outcomes = await client.wait(ids, timeout_s=600)
            assert all(o.status == "done" for o in outcomes), [o.error for o in outcomes]

    asyncio.run(ingest())
    yield server, worker, tmp / "qdrant"
    worker.stop()
    server.stop()


def search(url, query, **kw):
    async def go():
        async with PoolqClient(url) as client:
            return await client.search(query, COLLECTION, **kw)

    return asyncio.run(go())


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_finds_the_named_document_first(env, mode):
    server, _, _ = env
    for name, (_, query) in TARGETS.items():
        result = search(server.url, query, mode=mode, limit=5)
        assert result.mode == mode
        assert result.hits, (mode, query)
        assert result.hits[0].doc_id == f"target-{name}", (
            mode,
            query,
            [(h.doc_id, h.score) for h in result.hits],
        )
        top = result.hits[0]
        assert top.text == TARGETS[name][0]
        assert top.metadata["kind"] == "target"
        assert top.chunk_index == 0
        assert [h.score for h in result.hits] == sorted(
            (h.score for h in result.hits), reverse=True
        )


def test_default_mode_is_rerank_and_dbsf_fusion_works(env):
    server, _, _ = env
    assert search(server.url, TARGETS["tea"][1]).mode == "rerank"
    result = search(server.url, TARGETS["tea"][1], mode="hybrid", fusion="dbsf")
    assert result.hits[0].doc_id == "target-tea"


def test_filters_exclude_what_they_should(env):
    server, _, _ = env
    query = TARGETS["chess"][1]  # target-chess has lang "de" (k=2), n=1002
    for mode in MODES:
        hits = search(server.url, query, mode=mode, limit=20, filters=["lang=en"]).hits
        assert hits and all(h.metadata["lang"] == "en" for h in hits)
        assert "target-chess" not in {h.doc_id for h in hits}
        hits = search(server.url, query, mode=mode, limit=20, filters=["kind=python"]).hits
        assert hits and all(h.metadata["kind"] == "python" for h in hits)
    hits = search(server.url, query, mode="hybrid", limit=50, filters=["n>=10", "n<20"]).hits
    assert hits and all(10 <= h.metadata["n"] < 20 for h in hits)
    assert len({h.doc_id for h in hits}) <= 10
    hits = search(server.url, query, limit=10, filters=["kind!=python"]).hits
    assert {h.doc_id for h in hits} == {f"target-{n}" for n in TARGETS}
    hits = search(server.url, query, limit=10, filters=["doc_id=target-whale"]).hits
    assert [h.doc_id for h in hits] == ["target-whale"]
    # score threshold: a dense cosine cut
    all_hits = search(server.url, query, mode="dense", limit=20).hits
    cut = (all_hits[3].score + all_hits[4].score) / 2
    kept = search(server.url, query, mode="dense", limit=20, score_threshold=cut).hits
    assert [h.id for h in kept] == [h.id for h in all_hits[:4]]


def test_bad_requests_are_refused_with_clear_errors(env):
    server, _, _ = env
    with pytest.raises(SearchError, match="filter 'lang'"):
        search(server.url, "x", filters=["lang"])
    with pytest.raises(SearchError, match="nope"):
        asyncio.run(_search_collection(server.url, "nope"))
    with pytest.raises(SearchError, match="mode"):
        search(server.url, "x", mode="fuzzy")
    with pytest.raises(SearchError, match="query"):
        search(server.url, "   ")


async def _search_collection(url, name):
    async with PoolqClient(url) as client:
        return await client.search("anything", name)


def test_no_worker_is_answered_at_once(tmp_path):
    """No worker alive on this Redis: the search is refused at once, not after its 30 s timeout
    (a TimeoutError naming the cause): before its request is queued, so nothing waits on the
    search queue and nothing was ever pushed there (the server's own count)."""
    with LocalRedis(tmp_path / "r") as other:
        client = SyncPoolqClient(other.url)
        run = client._loop.run_until_complete
        try:
            with pytest.raises(TimeoutError, match="no worker is running"):
                client.search("hello", COLLECTION, timeout_s=30)
            assert run(client._client.redis.llen(SEARCH_QUEUE)) == 0
            assert "rpush" not in run(command_calls(client._client.redis))
        finally:
            client.close()


def test_cli_table_and_json_lines(env):
    server, _, _ = env
    cmd = [sys.executable, "-m", "poolq.worker", "search", TARGETS["whale"][1]]
    common = ["--collection", COLLECTION, "--redis-url", server.url]
    environ = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [*cmd, *common, "--json", "--limit", "3", "--mode", "hybrid"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert [x["rank"] for x in lines] == [1, 2, 3]
    assert lines[0]["doc_id"] == "target-whale"
    assert set(lines[0]) >= {"id", "score", "doc_id", "chunk_index", "text", "metadata"}
    assert "mode hybrid" in out.stderr
    out = subprocess.run(
        [*cmd, *common, "--filter", "kind=target"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    rows = out.stdout.splitlines()
    assert rows[0].split()[:4] == ["#", "score", "source", "chunk"]  # (cites; else the doc id)
    assert "target-whale" in rows[1]
    assert len(rows) == 1 + len(TARGETS)
    bad = subprocess.run(
        [*cmd, *common, "--filter", "n>>3"], capture_output=True, text=True, env=environ
    )
    assert bad.returncode == 2 and "filter 'n>>3'" in bad.stderr


def test_sync_client(env):
    server, _, _ = env
    client = SyncPoolqClient(server.url)
    try:
        result = client.search(TARGETS["bread"][1], COLLECTION, mode="sparse", limit=3)
    finally:
        client.close()
    assert result.hits[0].doc_id == "target-bread"
    assert result.encode_s > 0 and result.search_s > 0


def test_rerank_order_is_maxsim_recomputed_from_stored_vectors(env):
    """Last in the module: it stops the worker to open the embedded folder itself."""
    from sentence_transformers import SentenceTransformer

    server, worker, qpath = env
    query = "read a file line by line"
    limit, candidates = 10, 40
    flat = {"candidates": candidates, "group_by": None}  # chunks: points as Qdrant ranks them
    hybrid = search(server.url, query, mode="hybrid", limit=candidates, **flat)
    rerank = search(server.url, query, mode="rerank", limit=limit, **flat)
    worker.stop()

    st = SentenceTransformer(str(minilm_path()), device="cpu")
    q = st.encode(query, output_value="token_embeddings").cpu().numpy()
    client = EdgeStore(qpath)
    try:
        ids = [h.id for h in hybrid.hits]
        stored = {
            str(p.id): np.asarray(p.vector["colbert"])
            for p in client.retrieve(COLLECTION, ids, with_vectors=["colbert"])
        }
    finally:
        client.close()
    by_hand = sorted(((maxsim(q, stored[i]), i) for i in ids), reverse=True)
    assert [h.id for h in rerank.hits] == [i for _, i in by_hand[:limit]]
    for h, (score, _) in zip(rerank.hits, by_hand, strict=False):
        assert h.score == pytest.approx(score, abs=1e-3)


def test_direct_search_on_a_folder_no_worker_holds(env, capsys):
    """`--direct` encodes in this process and opens the folder itself (the worker is stopped)."""
    from poolq.ingest.cli.search import run_search
    from poolq.worker.cli.search import direct_search

    _, worker, qpath = env
    worker.stop()
    rc = run_search(
        TARGETS["volcano"][1],
        COLLECTION,
        mode=None,
        limit=3,
        filters=["kind=target"],
        score_threshold=None,
        fusion="rrf",
        as_json=True,
        config=None,
        redis_url=None,
        timeout_s=5,
        direct=direct_search(None, None, None, qpath, None),
    )
    out = capsys.readouterr()
    assert rc == 0, out.err
    hits = [json.loads(x) for x in out.out.splitlines()]
    assert hits[0]["doc_id"] == "target-volcano" and len(hits) == 3
    assert all("chunks" in h for h in hits)  # per document by default, --direct too
    assert "mode rerank" in out.err
