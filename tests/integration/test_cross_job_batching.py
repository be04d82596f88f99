"""Many small concurrent jobs share engine batches (continuous batching across jobs), by the
engine's own counters; that they therefore end sooner is measured by
benchmarks/bench_cross_job.py."""

import asyncio
import time

import pytest

from poolq.ingest.client import PoolqClient
from poolq.worker.dev.local_worker import WorkerProcess

pytestmark = pytest.mark.slow
MINILM = "bundled:all-minilm-l6-v2"


def jobs(n_jobs=20, docs_per_job=3):
    return [
        [
            {
                "id": f"j{j}-d{d}",
                "text": f"Job {j} document {d}: a short note about topic {j * 7 + d} and pooling.",
            }
            for d in range(docs_per_job)
        ]
        for j in range(n_jobs)
    ]


def engine_stats(worker, jobs_done, timeout_s=30):
    """The MiniLM engine's counters once the heartbeat has seen ``jobs_done`` jobs."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        hb = worker.stats()
        if hb["jobs_done"] >= jobs_done:
            return hb["engines"][MINILM]
        time.sleep(0.2)
    raise TimeoutError("heartbeat did not catch up")


def test_concurrent_jobs_share_batches(redis_server, tmp_path):
    work = jobs()
    with WorkerProcess(redis_server.url, tmp_path / "qdrant") as worker:

        async def one_at_a_time():
            async with PoolqClient(redis_server.url) as c:
                for docs in work:
                    ids = await c.enqueue("seq", docs, job_size=len(docs), force=True)
                    await c.wait(ids, timeout_s=120, poll_s=0.01)

        async def all_at_once():
            async with PoolqClient(redis_server.url) as c:
                ids = [
                    i
                    for docs in work
                    for i in await c.enqueue("conc", docs, job_size=len(docs), force=True)
                ]
                return await c.wait(ids, timeout_s=120, poll_s=0.01)

        asyncio.run(one_at_a_time())  # warm-up round: collection creation, first-batch costs
        before = engine_stats(worker, 20)
        asyncio.run(one_at_a_time())
        seq = engine_stats(worker, 40)
        outcomes = asyncio.run(all_at_once())
        conc = engine_stats(worker, 60)
    assert all(o.status == "done" for o in outcomes)

    def mean_tokens(a, b):
        return (b["tokens"] - a["tokens"]) / (b["batches"] - a["batches"])

    seq_mean, conc_mean = mean_tokens(before, seq), mean_tokens(seq, conc)
    multi = conc["multi_group_batches"] - seq["multi_group_batches"]
    print(
        f"one at a time: {seq_mean:.0f} tokens/batch; concurrent: {conc_mean:.0f} tokens/batch, "
        f"{multi} multi-job batches"
    )
    assert seq["multi_group_batches"] == before["multi_group_batches"], (
        "one job at a time never mixes jobs"
    )
    assert multi >= 1, "batches hold requests from several jobs"
    assert conc_mean >= 5 * seq_mean
