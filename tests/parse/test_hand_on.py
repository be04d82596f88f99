"""A parse job hands its documents on in ingest jobs planned for the live encode workers'
limits (the client's splitter, wire/job_plan.py), not the defaults: against a real Redis with the
workers' heartbeats in it. A retry of the parse job enqueues nothing twice; a document no job can
carry is that file's error, and the others go on."""

from __future__ import annotations

import time

from arq.connections import create_pool

from poolq.wire import constants
from poolq.wire.connection import redis_settings
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.heartbeat import Heartbeat, WorkerLimits
from poolq.wire.records.job_args import IngestArgs, ParseArgs
from poolq.wire.serialization import deserialize, serialize
from poolq.worker.app.jobs.parse import _hand_on


async def pool(url: str):
    return await create_pool(
        redis_settings(url), job_serializer=serialize, job_deserializer=deserialize
    )


async def beat(redis, worker_id: str, role: str, limits: WorkerLimits) -> None:
    h = Heartbeat(worker_id, seen_at=time.time(), role=role, limits=limits)
    await redis.set(constants.HEARTBEAT_KEY.format(worker_id=worker_id), h.pack(), ex=30)
    await redis.zadd(constants.WORKER_LAST_SEEN_KEY, {worker_id: time.time()})


async def handed_on(redis, ids: list[str]) -> list[list[str]]:
    out = []
    for job_id in ids:
        job = deserialize(await redis.get(f"arq:job:{job_id}"))
        args = IngestArgs(*job["a"], **job["k"])
        out.append([d["id"] for d in args.documents])
    return out


async def test_the_hand_on_follows_the_live_encode_workers_limits(redis_server):
    redis = await pool(redis_server.url)
    try:
        await beat(redis, "enc", "encode", WorkerLimits(max_documents_per_job=2))
        # a parse worker's heartbeat says nothing of what an encode worker accepts
        await beat(redis, "par", "parse", WorkerLimits(max_documents_per_job=1))
        docs = [{"id": f"f{i}", "text": f"page {i}"} for i in range(5)]
        args = ParseArgs("manuals", [], False, "bulk")
        ids, refused = await _hand_on({"redis": redis}, "p", args, docs)
        assert refused == [] and await handed_on(redis, ids) == [["f0", "f1"], ["f2", "f3"], ["f4"]]
        again, _ = await _hand_on({"redis": redis}, "p", args, docs)  # the parse job retried
        assert again == ids and await redis.zcard(constants.INGEST_QUEUE) == 3
    finally:
        await redis.aclose()


async def test_a_document_no_job_can_carry_is_refused_and_the_rest_go_on(redis_server):
    redis = await pool(redis_server.url)
    try:
        await beat(redis, "enc", "all", WorkerLimits(max_job_bytes=8_000))
        docs = [{"id": "small", "text": "x"}, {"id": "huge", "text": "y" * 9_000}]
        ids, refused = await _hand_on({"redis": redis}, "p", ParseArgs("c", []), docs)
        assert await handed_on(redis, ids) == [["small"]]
        (error,) = refused
        assert (error.ref, error.code) == ("huge", ErrorCode.TOO_LARGE)
        assert "over the worker's limit of 8000 bytes per job" in error.message
    finally:
        await redis.aclose()
