"""What a real worker stores, decoded strictly with the records of ``wire/records``: an
ingest job's arq result and its outcome, a reindex job's summaries and its progress record. A
field the worker writes that a record does not declare fails here (``strict=True``), and so
does a declared field it stopped writing. Real processes: Redis server -> ``poolq worker`` ->
embedded Qdrant; a few documents, one of them bad."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import redis
from arq.constants import result_key_prefix
from arq.jobs import deserialize_result

from poolq.ingest.client import PoolqClient
from poolq.wire import constants
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.outcome import JobOutcomeRecord, outcome_key
from poolq.wire.records.reindex import ReindexProgress, ReindexSummary
from poolq.wire.records.results import DocumentErrorRecord, IngestResult
from poolq.wire.serialization import deserialize
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

pytestmark = pytest.mark.slow
DOCS = [
    {"id": "a", "text": "Harbour cranes unload containers at dawn."},
    {"id": "b", "text": "   "},  # refused: nothing to index
    {"id": "c", "text": "Sourdough needs a starter and patience.", "metadata": {"k": 1}},
]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wire")
    server = LocalRedis(tmp / "redis").start()
    worker = WorkerProcess(server.url, tmp / "qdrant", env={"POOLQ_SOURCE_ROOTS": str(tmp)})
    worker.start()
    yield server.url, tmp
    worker.stop()
    server.stop()


def run_job(url: str, start: Any) -> tuple[Any, bytes, bytes | None]:
    """Start a job with ``start(client)`` and wait for it. Returns what Redis holds then: the
    job's arq result (msgpack decoded, nothing more), its outcome record and the progress record
    of a reindex of "kb" (raw bytes)."""

    async def go() -> str:
        async with PoolqClient(url) as client:
            job_id = await start(client)
            (outcome,) = await client.wait([job_id], timeout_s=300)
            assert outcome.status in ("done", "refused"), outcome.error
            return job_id

    job_id = asyncio.run(go())
    r = redis.Redis.from_url(url)
    try:
        info = deserialize_result(r.get(result_key_prefix + job_id), deserializer=deserialize)
        outcome = r.get(outcome_key(job_id))
        progress = r.get(constants.REINDEX_PROGRESS_KEY.format(collection="kb"))
    finally:
        r.close()
    assert info.success, info.result
    return info.result, outcome, progress


async def _ingest(client: PoolqClient) -> str:
    (job_id,) = await client.enqueue("docs", DOCS)
    return job_id


def test_an_ingest_result_decodes_strictly(env) -> None:
    url, _ = env
    raw, outcome, _ = run_job(url, _ingest)
    result = IngestResult.from_wire(raw, strict=True)
    assert (result.documents, result.skipped) == (2, 0) and result.points >= 2
    assert result.errors == [
        DocumentErrorRecord("b", "text", "text: empty (nothing to index)", ErrorCode.BAD_REQUEST)
    ]
    assert raw["errors"][0]["code"] == "bad_request"
    stored = JobOutcomeRecord.unpack(outcome, strict=True)
    assert stored.status == "done" and IngestResult.from_wire(stored.result, strict=True) == result


def test_reindex_summaries_and_progress_decode_strictly(env) -> None:
    url, tmp = env
    source = tmp / "kb.jsonl"
    source.write_text(
        "".join(json.dumps(d) + "\n" for d in DOCS) + "{not json\n"
    )  # one refused document, one unreadable line

    async def full(client: PoolqClient) -> str:
        return await client.reindex(str(source), "kb", full=True)

    raw, _, progress_raw = run_job(url, full)
    first = ReindexSummary.from_wire(raw, strict=True)
    assert "switched_from" in raw and first.switched_from is None  # a first rebuild
    assert "dropped" not in raw
    assert (first.documents, first.new, first.points) == (2, 2, first.encoded_chunks)
    assert [(e.id, e.field, e.code) for e in first.errors] == [
        ("b", "text", ErrorCode.BAD_REQUEST),
        (None, "source", ErrorCode.BAD_REQUEST),
    ]
    progress = ReindexProgress.unpack(progress_raw, strict=True)
    assert (progress.state, progress.done, progress.result) == ("done", 2, first)

    raw, _, _ = run_job(url, full)
    second = ReindexSummary.from_wire(raw, strict=True)
    assert second.switched_from == first.target == second.dropped != second.target
