"""Real load, as a user's machine meets it: a backlog that takes longer than the job timeout,
a busy neighbour process on one of the cores, and a one-document job enqueued behind the
backlog (the README's snippet). Every document lands exactly once, no job fails, the small job
finishes long before the backlog, and the worker never reaps itself."""

from __future__ import annotations

import asyncio
import multiprocessing
import time

import pytest

from poolq.ingest.client import PoolqClient
from poolq.worker.dev.local_worker import WorkerProcess
from tests.integration.test_reliability import COLLECTION, assert_exact, corpus

pytestmark = pytest.mark.slow

# POOLQ_JOB_STALL_TIMEOUT_S, the limit that takes the place of arq's wall-clock job timeout (the
# backlog takes longer than it), and POOLQ_JOB_TIMEOUT_S, the ceiling on one run of a job
STALL_S, CEILING_S = 30, 60


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


async def _run(url: str, backlog: list[dict], small: dict) -> dict[str, float]:
    async with PoolqClient(url) as client:
        t0 = time.monotonic()
        ids = await client.enqueue(COLLECTION, backlog, job_size=10)
        await asyncio.sleep(3)  # the backlog is under way
        t_small = time.monotonic()
        (small_id,) = await client.enqueue(COLLECTION, [small])  # one job: interactive
        (small_out,) = await client.wait([small_id], timeout_s=600)
        small_done = time.monotonic()
        outcomes = await client.wait(ids, timeout_s=900)
        backlog_done = time.monotonic()
    failed = [o for o in [*outcomes, small_out] if o.status != "done"]
    assert not failed, [(o.job_id, o.status, o.error) for o in failed]
    return {
        "small_s": small_done - t_small,
        "backlog_s": backlog_done - t0,
        "small_left_s": backlog_done - small_done,
    }


@pytest.mark.timeout(900)
def test_a_backlog_past_the_timeout_beside_a_busy_neighbour_lands_whole(redis_server, tmp_path):
    backlog = corpus(600)  # over 30 s on a fast 2-core Xeon (21 s at 300)
    small = {"id": "small-1", "text": "Redis is an in-memory data store.", "metadata": {}}
    qpath = tmp_path / "qdrant"
    log = tmp_path / "worker.log"
    neighbour = multiprocessing.get_context("spawn").Process(target=_spin, args=(900,), daemon=True)
    neighbour.start()
    env = {"POOLQ_JOB_TIMEOUT_S": str(CEILING_S), "POOLQ_JOB_STALL_TIMEOUT_S": str(STALL_S)}
    worker = WorkerProcess(redis_server.url, qpath, log=log, env=env).start()
    try:
        times = asyncio.run(_run(redis_server.url, backlog, small))
    finally:
        worker.stop()
        neighbour.terminate()
        neighbour.join()
    print(f"real load: {times}")
    assert times["backlog_s"] > STALL_S, "the backlog must outlast the job timeout"
    assert times["small_s"] < 30, times  # started within seconds, shared the engine
    assert times["small_left_s"] > 10, times  # long before the backlog finished
    assert_exact(qpath, [*backlog, small])
    text = log.read_text()
    assert "has no heartbeat" not in text and "handed back" not in text
    assert "TimeoutError" not in text and "Stalled" not in text
