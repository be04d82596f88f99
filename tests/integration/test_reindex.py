"""Reindexing with real processes: incremental by content hash (unchanged costs nothing, 10%
changed re-encodes exactly those, deletions propagate), a full rebuild with an alias switch
under a loop of searches, one reindex per collection at a time, and a cron entry firing."""

import asyncio
import json
import threading
import time

import pytest

from poolq.ingest.client import PoolqClient, SyncPoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.wire.records.reindex import ReindexSkipped, ReindexSummary
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

pytestmark = pytest.mark.slow
COLLECTION = "kb"
N_DOCS = 60


def make_docs():
    ps = passages(N_DOCS + 20)
    docs = []
    for i in range(N_DOCS):
        text = ps[i] if i % 7 else "\n\n".join(ps[i : i + 12])  # some multi-chunk documents
        docs.append({"id": f"doc-{i:02d}", "text": text, "metadata": {"n": i, "tag": "a"}})
    return docs


def write_jsonl(path, docs):
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reindex")
    server = LocalRedis(tmp / "redis").start()
    worker = WorkerProcess(server.url, tmp / "qdrant", env={"POOLQ_SOURCE_ROOTS": str(tmp)}).start()
    state = {"docs": make_docs(), "source": tmp / "source.jsonl"}
    write_jsonl(state["source"], state["docs"])
    yield server, worker, tmp, state
    worker.stop()
    server.stop()


def reindex(url, source, collection=COLLECTION, **kw):
    async def go():
        async with PoolqClient(url) as client:
            job_id = await client.reindex(str(source), collection, **kw)
            (outcome,) = await client.wait([job_id], timeout_s=600)
            assert outcome.status == "done", outcome.error
            assert isinstance(outcome.result, ReindexSummary), outcome.result
            return outcome.result.to_wire()  # (the tests read the summary as the map it stores)

    return asyncio.run(go())


def fresh_heartbeat(worker):
    """A heartbeat written after this call (they come every 2 s)."""
    t = time.time()
    deadline = t + 10
    while time.time() < deadline:
        h = worker.stats()
        if h["seen_at"] > t:
            return h
        time.sleep(0.2)
    raise TimeoutError("no fresh heartbeat")


def engine_texts(h):
    return sum(e["texts"] for e in h["engines"].values())


def chunks_of(url, doc_id):
    client = SyncPoolqClient(url)
    try:
        hits = client.search(
            "x", COLLECTION, mode="dense", limit=100, filters=[f"doc_id={doc_id}"], group_by=None
        ).hits  # every chunk of the document
    finally:
        client.close()
    return sorted(hits, key=lambda h: h.chunk_index)


def test_first_reindex_writes_every_document(env):
    server, _, _, state = env
    r = reindex(server.url, state["source"])
    assert (r["new"], r["changed"], r["unchanged"], r["removed"]) == (N_DOCS, 0, 0, 0)
    assert r["errors"] == [] and r["points"] == r["encoded_chunks"] >= N_DOCS
    assert r["engine_requests"] == 2 * r["encoded_chunks"]  # MiniLM and SPLADE
    status = SyncPoolqClient(server.url)
    try:
        (progress,) = status.status().reindex
    finally:
        status.close()
    assert progress.state == "done" and progress.collection == COLLECTION
    assert progress.done == N_DOCS


def test_unchanged_source_costs_no_model_work_and_no_writes(env):
    server, worker, _, state = env
    before = fresh_heartbeat(worker)
    r = reindex(server.url, state["source"])
    after = fresh_heartbeat(worker)
    assert r["unchanged"] == N_DOCS
    assert (r["engine_requests"], r["write_calls"], r["points_written"]) == (0, 0, 0)
    # the worker's own counters agree: no text reached an engine, no write reached Qdrant
    assert engine_texts(after) == engine_texts(before)
    assert after["write_calls"] == before["write_calls"]
    assert after["points_written"] == before["points_written"]


def test_ten_percent_changed_re_encodes_exactly_those(env):
    server, worker, _, state = env
    docs = state["docs"]
    changed = {f"doc-{i:02d}" for i in range(0, N_DOCS, 10)}  # 6 of 60, two multi-chunk
    for d in docs:
        if d["id"] in changed:
            d["text"] += " This sentence was added for the reindex test."
    docs[1]["metadata"] = {"n": 1, "tag": "b"}  # metadata only
    write_jsonl(state["source"], docs)
    before = fresh_heartbeat(worker)
    r = reindex(server.url, state["source"])
    after = fresh_heartbeat(worker)
    assert (r["changed"], r["metadata_only"], r["new"], r["removed"]) == (6, 1, 0, 0)
    assert r["unchanged"] == N_DOCS - 7
    stored = {doc_id: chunks_of(server.url, doc_id) for doc_id in changed}
    expected_chunks = sum(len(v) for v in stored.values())
    assert r["encoded_chunks"] == expected_chunks == r["points"]
    assert engine_texts(after) - engine_texts(before) == 2 * expected_chunks
    for hits in stored.values():
        assert hits[-1].text.endswith("added for the reindex test.")
        assert [h.chunk_index for h in hits] == list(range(len(hits)))
    assert {h.metadata["tag"] for h in chunks_of(server.url, "doc-01")} == {"b"}


def test_documents_deleted_from_the_source_are_deleted(env):
    server, _, _, state = env
    gone = state["docs"][-5:]
    state["docs"] = state["docs"][:-5]
    write_jsonl(state["source"], state["docs"])
    assert chunks_of(server.url, gone[0]["id"])
    r = reindex(server.url, state["source"])
    assert r["removed"] == 5 and r["unchanged"] == N_DOCS - 5 and r["engine_requests"] == 0
    for d in gone:
        assert chunks_of(server.url, d["id"]) == []
    assert chunks_of(server.url, state["docs"][-1]["id"])


def test_full_rebuild_switches_the_alias_under_a_search_loop(env):
    server, _, _, state = env
    stop = threading.Event()
    stats = {"searches": 0, "empty": 0, "errors": []}

    def loop():
        client = SyncPoolqClient(server.url)
        try:
            while not stop.is_set():
                try:
                    result = client.search("read a file", COLLECTION, mode="hybrid", limit=5)
                    stats["searches"] += 1
                    stats["empty"] += not result.hits
                except Exception as e:
                    stats["errors"].append(repr(e))
        finally:
            client.close()

    t = threading.Thread(target=loop)
    t.start()
    try:
        time.sleep(1)
        r = reindex(server.url, state["source"], full=True)
        time.sleep(1)
    finally:
        stop.set()
        t.join(60)
    assert stats["errors"] == [] and stats["empty"] == 0, stats
    assert stats["searches"] >= 10
    assert r["new"] == len(state["docs"]) and r["target"].startswith(f"{COLLECTION}__")
    assert r["switched_from"] is not None and r["dropped"] == r["switched_from"]
    assert r["switched_from"] != r["target"]
    # the rebuilt collection is complete: an incremental reindex finds nothing to do
    again = reindex(server.url, state["source"])
    assert again["unchanged"] == len(state["docs"]) and again["engine_requests"] == 0


def test_one_reindex_per_collection_at_a_time(env):
    server, _, _, state = env

    async def go():
        async with PoolqClient(server.url) as client:
            ids = [await client.reindex(str(state["source"]), COLLECTION, full=True) for _ in "ab"]
            return await client.wait(ids, timeout_s=600)

    outcomes = asyncio.run(go())
    assert all(o.status == "done" for o in outcomes)
    skipped = [o.result for o in outcomes if isinstance(o.result, ReindexSkipped)]
    assert len(skipped) == 1 and "another reindex of 'kb' is running" in skipped[0].skipped


def test_folder_source_ids_are_absolute_paths(env):
    """A file's id is its absolute path (unique across folders); metadata keeps the relative one."""
    server, _, tmp, _ = env
    root = tmp / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# Alpha\n\nThe alpha note about harbour cranes.")
    (root / "sub" / "b.txt").write_text("The beta note about sourdough bread.")
    (root / "ignored.bin").write_bytes(b"\x00\x01")
    r = reindex(server.url, root, collection="notes")
    assert r["new"] == 2 and r["errors"] == []
    client = SyncPoolqClient(server.url)
    try:
        hits = client.search("sourdough", "notes", limit=2).hits
    finally:
        client.close()
    assert hits[0].doc_id == str((root / "sub" / "b.txt").resolve())
    assert hits[0].metadata == {"path": "sub/b.txt"}
    (root / "a.md").unlink()
    r = reindex(server.url, root, collection="notes")
    assert (r["removed"], r["unchanged"]) == (1, 1)


def test_cli_reindex_wait_and_status(env):
    import os
    import subprocess
    import sys

    server, _, _, state = env
    environ = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "poolq.worker"]
    out = subprocess.run(
        [*cmd, "reindex", "--source", str(state["source"]), "--collection", COLLECTION, "--wait",
         "--redis-url", server.url],
        capture_output=True, text=True, env=environ, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    n = len(state["docs"])
    assert f"incremental of 'kb': {n} documents (0 new, 0 changed" in out.stdout
    assert f"{n} unchanged" in out.stdout and "0 chunks encoded" in out.stdout
    status = subprocess.run(
        [*cmd, "status", "--redis-url", server.url],
        capture_output=True, text=True, env=environ, timeout=120,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    assert "reindex 'kb' from" in status.stdout and ": done" in status.stdout
    missing = subprocess.run(
        [*cmd, "reindex", "--source", "/no/such/file", "--collection", COLLECTION,
         "--redis-url", server.url],
        capture_output=True, text=True, env=environ, timeout=120,
    )  # fmt: skip
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_sources_outside_the_allowed_roots_are_refused(env):
    """Anyone who can write to Redis can enqueue a reindex: it must not read /etc."""
    server, _, _, _ = env

    async def go():
        async with PoolqClient(server.url) as client:
            job_id = await client.reindex("/etc", "leak")
            return (await client.wait([job_id], timeout_s=60))[0]

    outcome = asyncio.run(go())
    assert outcome.status == "failed" and "outside the worker's source roots" in outcome.error


def test_cron_entry_fires_and_reencodes_points_of_another_profile_version(env):
    """Last: replaces the module's worker with one whose config schedules a reindex every 2 s
    and chunks with another overlap (a new profile version, so every document is stale)."""
    server, worker, tmp, state = env
    worker.stop()
    cfg = tmp / "poolq.toml"
    cfg.write_text(
        "[chunking]\noverlap_tokens = 16\n\n"
        f'[[reindex]]\nsource = "{state["source"]}"\ncollection = "{COLLECTION}"\n'
        'cron = "*/2 * * * * *"\n'
    )
    cron_worker = WorkerProcess(server.url, tmp / "qdrant", "--config", str(cfg)).start()
    try:
        runs = wait_for_cron_results(server.url, "reindex:kb:0:", 2)
    finally:
        cron_worker.stop()
    first, second = runs[0], runs[1]
    assert "skipped" not in first and "skipped" not in second, runs
    n = len(state["docs"])
    assert (first["stale"], first["unchanged"], first["new"]) == (n, 0, 0)
    assert first["encoded_chunks"] > 0
    assert (second["unchanged"], second["engine_requests"]) == (n, 0)


def wait_for_cron_results(url, prefix, n, timeout_s=120):
    """Results of the first ``n`` cron runs that were not skipped (arq ids ``NAME:<unix ms>``),
    in time order."""
    import redis
    from arq.constants import result_key_prefix
    from arq.jobs import deserialize_result

    from poolq.wire.serialization import deserialize

    r = redis.Redis.from_url(url)
    deadline = time.time() + timeout_s
    try:
        while time.time() < deadline:
            keys = sorted(
                r.scan_iter(match=f"{result_key_prefix}{prefix}*"),
                key=lambda k: int(k.decode().rsplit(":", 1)[1]),
            )
            infos = [deserialize_result(r.get(k), deserializer=deserialize) for k in keys]
            assert all(i.success for i in infos), [i.result for i in infos]
            # a run that fires while the previous one still works is skipped (one per collection)
            ran = [i.result for i in infos if "skipped" not in i.result]
            if len(ran) >= n:
                return ran[:n]
            time.sleep(0.3)
    finally:
        r.close()
    raise TimeoutError(f"fewer than {n} cron runs of {prefix} in {timeout_s}s")
