"""Re-enqueueing documents a collection already holds unchanged costs no model work and no
writes (their stored ``doc_hash``, ``meta_hash`` and ``profile_version`` match); a changed
document is re-encoded; ``force=True`` re-encodes everything. Each ingest job publishes its
progress under ``JOB_PROGRESS_KEY`` and records its metadata fields under
``COLLECTION_FIELDS_KEY``. A real redis-server and a real worker process."""

from __future__ import annotations

import asyncio
import copy
import threading
import time
import uuid

import pytest
import redis as redis_sync

from poolq.ingest.client import PoolqClient
from poolq.wire import constants
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.integration.test_reindex import engine_texts, fresh_heartbeat
from tests.integration.test_reliability import assert_exact, corpus

pytestmark = pytest.mark.slow
COLLECTION = "docs"
N_DOCS = 199


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("skip")
    server = LocalRedis(tmp / "redis").start()
    worker = WorkerProcess(server.url, tmp / "qdrant").start()
    docs = corpus(N_DOCS)
    for d in docs:
        d["metadata"] |= {"lang": "en", "tags": ["a", "b"], "score": 0.5, "extra": None}
    docs[3]["metadata"]["nested"] = {"year": 2020, "ok": True}
    yield server, worker, tmp, docs
    worker.stop()
    server.stop()


def ingest(url, docs, **kwargs):
    """One ingest job, enqueued as the client does (``force`` as an arq keyword argument)."""

    async def go():
        async with PoolqClient(url) as client:
            job_id = uuid.uuid4().hex
            await client.redis.enqueue_job(
                constants.INGEST_JOB, COLLECTION, docs, _job_id=job_id, **kwargs
            )
            t0 = time.monotonic()
            (outcome,) = await client.wait([job_id], timeout_s=900)
            assert outcome.status == "done", outcome.error
            return job_id, outcome.result, time.monotonic() - t0

    return asyncio.run(go())


def progress_of(url, job_id):
    r = redis_sync.Redis.from_url(url)
    try:
        key = constants.JOB_PROGRESS_KEY.format(job_id=job_id)
        raw = r.hgetall(key)
        return {k.decode(): int(v) for k, v in raw.items()}, r.ttl(key)
    finally:
        r.close()


def test_first_ingest_writes_everything_and_publishes_its_progress(env):
    server, _, _, docs = env
    seen: list[dict[str, int]] = []
    stop = threading.Event()
    job_id = uuid.uuid4().hex

    def watch():
        while not stop.is_set():
            p, _ = progress_of(server.url, job_id)
            if p and (not seen or p != seen[-1]):
                seen.append(p)
            time.sleep(0.05)

    t = threading.Thread(target=watch)
    started = int(time.time())  # (the record's times are whole seconds)
    t.start()
    try:

        async def go():
            async with PoolqClient(server.url) as client:
                await client.redis.enqueue_job(
                    constants.INGEST_JOB, COLLECTION, docs, _job_id=job_id
                )
                return (await client.wait([job_id], timeout_s=900))[0]

        outcome = asyncio.run(go())
    finally:
        stop.set()
        t.join(10)
    assert outcome.status == "done", outcome.error
    result = outcome.result
    assert result.skipped == 0 and result.documents == N_DOCS and result.errors == []
    final, ttl = progress_of(server.url, job_id)
    # the dashboard's: time in each stage, and when the record was last written
    stages = {k: final.pop(k) for k in ("chunk_ms", "encode_ms", "write_ms", "updated_at")}
    assert stages["encode_ms"] > 0 and started <= stages["updated_at"] <= time.time()
    assert final == {
        "documents": N_DOCS,
        "done": N_DOCS,
        "chunks": final["chunks"],
        "points": result.points,
        "errors": 0,
        "skipped": 0,
        "parsed": 0,  # (a parse job's: files read, their pages, those read by OCR)
        "pages": 0,
        "ocr_pages": 0,
    }
    assert final["chunks"] == result.points > N_DOCS  # some documents have several chunks
    assert 0 < ttl <= constants.JOB_PROGRESS_TTL_S
    # documents finished while the job ran, not all at once at the end
    partial = [p["done"] for p in seen if 0 < p["done"] < N_DOCS]
    print(f"progress: {len(seen)} distinct states, done went {[p['done'] for p in seen]}")
    assert partial, seen
    assert [p["done"] for p in seen] == sorted(p["done"] for p in seen)


def test_collection_fields_record_every_metadata_key_and_type(env):
    server, _, _, _ = env
    r = redis_sync.Redis.from_url(server.url)
    try:
        got = {
            k.decode(): set(v.decode().split(","))
            for k, v in r.hgetall(
                constants.COLLECTION_FIELDS_KEY.format(collection=COLLECTION)
            ).items()
        }
    finally:
        r.close()
    assert got == {
        "n": {"integer"},
        "lang": {"string"},
        "tags": {"array", "string"},
        "score": {"float"},
        "extra": {"null"},
        "nested": {"object"},
        "nested.year": {"integer"},
        "nested.ok": {"boolean"},
    }


def test_re_enqueueing_unchanged_documents_costs_no_model_work_and_no_writes(env):
    server, worker, _, docs = env
    before = fresh_heartbeat(worker)
    job_id, result, seconds = ingest(server.url, docs)
    after = fresh_heartbeat(worker)
    print(f"re-enqueueing {N_DOCS} unchanged documents took {seconds:.2f}s ({result})")
    assert result.skipped == N_DOCS
    assert (result.documents, result.points, result.errors) == (0, 0, [])
    assert engine_texts(after) == engine_texts(before)
    assert after["write_calls"] == before["write_calls"]
    assert after["points_written"] == before["points_written"]
    progress, _ = progress_of(server.url, job_id)
    assert progress["skipped"] == N_DOCS and progress["done"] == N_DOCS
    # (what skipping saves in time: benchmarks/bench_ingest_skip.py)


def test_a_changed_document_is_re_encoded_and_the_rest_skipped(env):
    server, worker, _, docs = env
    changed = copy.deepcopy(docs)
    changed[0]["text"] += " One more sentence."  # a multi-chunk document (every 8th is)
    changed[5]["metadata"]["lang"] = "de"  # metadata only: re-encoded too
    before = fresh_heartbeat(worker)
    _, result, _ = ingest(server.url, changed)
    after = fresh_heartbeat(worker)
    assert result.skipped == N_DOCS - 2 and result.documents == 2
    chunks = result.points
    assert chunks >= 3
    assert engine_texts(after) - engine_texts(before) == 2 * chunks  # MiniLM and SPLADE
    docs[:] = changed


def test_force_re_encodes_every_document(env):
    server, worker, _, docs = env
    before = fresh_heartbeat(worker)
    _, result, _ = ingest(server.url, docs, force=True)
    after = fresh_heartbeat(worker)
    assert result.skipped == 0 and result.documents == N_DOCS
    assert engine_texts(after) - engine_texts(before) == 2 * result.points
    assert after["write_calls"] > before["write_calls"]


def test_the_heartbeat_reports_the_worker_limits(env):
    _, worker, _, _ = env
    assert fresh_heartbeat(worker)["limits"] == {
        "max_documents_per_job": constants.MAX_DOCUMENTS_PER_JOB,
        "max_document_bytes": constants.MAX_DOCUMENT_BYTES,
        "max_job_bytes": constants.MAX_JOB_BYTES,
        "max_file_bytes": constants.MAX_FILE_BYTES,
    }


def test_the_collection_holds_every_chunk_of_every_document_once(env):
    _, worker, tmp, docs = env
    worker.stop()  # the embedded folder is the worker's while it runs
    assert_exact(tmp / "qdrant", docs)
