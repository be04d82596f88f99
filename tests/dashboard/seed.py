"""Real records written into a test Redis for the dashboard's tests and benchmark: jobs
enqueued by the client, dead letters by the worker's own writer, outcomes by the job index's
writer, heartbeats as workers write them."""

from __future__ import annotations

import time
from typing import Any

from poolq.ingest.client import PoolqClient
from poolq.wire import constants
from poolq.wire.job_plan import Limits
from poolq.wire.records.heartbeat import Heartbeat
from poolq.wire.records.progress import JobProgressRecord
from poolq.worker.reliability import dead_letter, job_records


async def enqueue(
    client: PoolqClient, collection: str, docs: list[dict[str, Any]], **kw: Any
) -> list[str]:
    return await client.enqueue(collection, docs, limits=Limits(), **kw)


async def dead(redis: Any, job_id: str, error: BaseException, *, docs: int = 2) -> None:
    documents = [{"id": f"{job_id}-d{i}", "text": "x"} for i in range(docs)]
    await dead_letter.record(
        redis, job_id, constants.INGEST_JOB, ["docs", documents], {"priority": "bulk"}, error, 3
    )
    progress = JobProgressRecord(docs, docs // 2, docs, 0, 0, 0)
    await redis.hset(constants.JOB_PROGRESS_KEY.format(job_id=job_id), mapping=progress.to_hash())


async def done(redis: Any, job_id: str, *, documents: int = 4) -> None:
    result = {
        "points": documents,
        "documents": documents,
        "errors": [],
        "skipped": 0,
        "seconds": 0.1,
    }
    await job_records.record_outcome(redis, job_id, success=True, result=result)


async def worker(redis: Any, worker_id: str, *, running: list[str] = ()) -> None:  # type: ignore[assignment]
    beat = Heartbeat(
        worker_id=worker_id,
        pid=1,
        host="test-host",
        started_at=time.time() - 60,
        seen_at=time.time(),
        engines={
            "dense": {
                "batches": 10,
                "texts": 100,
                "tokens": 9000,
                "mean_batch_tokens": 900.0,
                "queued_tokens": 120,
            }
        },
        device="cpu",
        backend="torch",
        max_batch_tokens=2048,
        host_load=0.25,
        role="all",
    )
    await redis.set(constants.HEARTBEAT_KEY.format(worker_id=worker_id), beat.pack(), ex=60)
    await job_records.worker_seen(redis, worker_id)
    if running:
        await redis.sadd(constants.WORKER_JOBS_KEY.format(worker_id=worker_id), *running)
