"""Cancel with a real worker: a running job stops at its next batch boundary (a part's write),
is recorded as cancelled (not retried, not dead-lettered), and the points it wrote stay; a
queued job never runs; ``poolq cancel`` says which happened."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.sinks.store.edge import EdgeStore
from poolq.wire.job_plan import Limits
from poolq.worker.dev.local_worker import WorkerProcess

pytestmark = pytest.mark.slow
DOCS = 1000  # 8 write parts or more (128 points a write)


@pytest.mark.timeout(600)
def test_a_running_job_stops_at_a_batch_boundary_and_keeps_its_points(redis_server, tmp_path):
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(passages(DOCS, 150, 250))]
    qpath = tmp_path / "qdrant"

    async def go():
        async with PoolqClient(redis_server.url) as c:
            (job_id,) = await c.enqueue("big", docs, job_size=DOCS, limits=Limits())
            (queued,) = await c.enqueue("big", docs[:3], limits=Limits(), priority="bulk")
            deadline = time.monotonic() + 300
            while True:  # running, and its first part written
                prog = (await c.progress([job_id])).get(job_id)
                if prog is not None and prog.points > 0:
                    break
                assert time.monotonic() < deadline, "the job did not start writing"
                await asyncio.sleep(0.02)
            asked = await c.cancel(job_id)
            (outcome,) = await c.wait([job_id], timeout_s=120)
            prog = (await c.progress([job_id]))[job_id]
            return job_id, queued, asked, outcome, prog, await c.dead_letters()

    with WorkerProcess(redis_server.url, qpath) as worker:
        _, queued, asked, outcome, prog, dead = asyncio.run(go())
        assert asked.state == "cancelling"
        assert outcome.status == "cancelled" and outcome.error.startswith("cancelled after")
        assert dead == []
        assert prog.points > 0 and prog.done < DOCS
        # the small job queued behind it: cancelled before it runs, by the command
        out = subprocess.run(
            [sys.executable, "-m", "poolq.worker", "cancel", queued, "--redis-url", redis_server.url, "--json"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        line = json.loads(out.stdout)
        assert line["job_id"] == queued and line["state"] in ("cancelled", "finished")
        worker.stop()
    store = EdgeStore(qpath)
    try:
        kept = store.count("big")
    finally:
        store.close()
    assert kept == prog.points  # the points written before the cancel stay
