"""A worker killed (SIGKILL) in the middle of a sync: another worker takes the job over and
resumes after the last page the first one checkpointed; it does not start over."""

from __future__ import annotations

import asyncio
import signal
import time

import pytest

from poolq.ingest.client import PoolqClient
from poolq.wire import constants
from poolq.wire.records.reindex import ReindexSummary
from poolq.wire.records.sync import SyncCheckpoint
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.sources.s3_server import S3Server

pytestmark = pytest.mark.slow
BUCKET = "killed-sync"


def test_a_worker_killed_mid_sync_is_resumed_by_another(tmp_path):
    with S3Server() as s3, LocalRedis(tmp_path / "redis") as redis:
        c = s3.bucket(BUCKET)
        for i in range(30):
            c.put_object(
                Bucket=BUCKET, Key=f"d/{i:03d}.md", Body=f"# Item {i}\n\nText {i}.".encode()
            )
        env = {**s3.env(), "POOLQ_SOURCE_URIS": f"s3://{BUCKET}/", "POOLQ_SOURCE_PAGE_OBJECTS": "5"}
        first = WorkerProcess(redis.url, tmp_path / "qdrant", env=env).start()

        async def start_and_wait_for_two_pages() -> tuple[str, SyncCheckpoint]:
            async with PoolqClient(redis.url) as client:
                job_id = await client.reindex(f"s3://{BUCKET}/d/", "killed")
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    raw = await client.redis.get(
                        constants.SOURCE_SYNC_KEY.format(collection="killed")
                    )
                    if raw and (ck := SyncCheckpoint.unpack(raw)).listed >= 10:
                        return job_id, ck
                    await asyncio.sleep(0.01)
                raise AssertionError("no checkpoint")

        job_id, ck = asyncio.run(start_and_wait_for_two_pages())
        first.stop(signal.SIGKILL)
        assert ck.listed < 30, "the sync ended before the kill"
        with WorkerProcess(redis.url, tmp_path / "qdrant", env=env):

            async def finish():
                async with PoolqClient(redis.url) as client:
                    (outcome,) = await client.wait([job_id], timeout_s=240)
                    return outcome

            outcome = asyncio.run(finish())

            async def again():
                async with PoolqClient(redis.url) as client:
                    (o,) = await client.wait(
                        [await client.reindex(f"s3://{BUCKET}/d/", "killed")], timeout_s=240
                    )
                    return o.result

            second = asyncio.run(again())
    assert outcome.status == "done", outcome.error
    r = outcome.result
    assert isinstance(r, ReindexSummary)
    # resumed from the checkpoint: its pages are counted, not listed again as unchanged
    assert (r.listed, r.new, r.unchanged, r.errors) == (30, 30, 0, [])
    # every object landed once: the next sync finds all 30 stored and unchanged
    assert (second.new, second.unchanged, second.fetched) == (0, 30, 0)
