"""Retries over the server path: the Qdrant endpoint is SIGKILLed in the middle of an ingest of
a few hundred documents and started again on the same folder and port; the worker's writer
retries (and the queue retries what it gave up on), every job ends done, and every document is
in the collection exactly once (each chunk 0..count-1 once, none missing, nothing extra), read
back through qdrant-client. An endpoint, Redis and worker of its own: it kills the endpoint."""

from __future__ import annotations

import asyncio
import time

import pytest

from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.audit import audit_collection
from tests.integration.server.helpers import connect
from tests.integration.test_reliability import MANY_RUNNING
from tests.support.endpoint_process import EndpointProcess

pytestmark = pytest.mark.slow
COLLECTION = "docs"
N_DOCS = 200


def corpus() -> list[dict]:
    ps = passages(N_DOCS + 4)
    return [
        {
            "id": f"doc-{i:03d}",
            # short texts (encoding is most of the time), a few of several chunks
            "text": " ".join(ps[i].split()[:60]) if i % 25 else "\n\n".join(ps[i : i + 4]),
            "metadata": {"n": i},
        }
        for i in range(N_DOCS)
    ]


async def _statuses(client: PoolqClient, ids: list[str]) -> list[str]:
    return [o.status for o in await asyncio.gather(*(client.outcome(j) for j in ids))]


@pytest.mark.timeout(420)
def test_endpoint_killed_mid_ingest_every_document_lands_once(tmp_path):
    docs = corpus()
    with (
        EndpointProcess(tmp_path / "endpoint") as endpoint,
        LocalRedis(tmp_path / "redis") as server,
        WorkerProcess(server.url, tmp_path / "worker", "--max-jobs", "4", env=MANY_RUNNING,
                      qdrant_url=endpoint.url) as worker,
    ):  # fmt: skip

        async def run() -> tuple[list, list[str]]:
            async with PoolqClient(server.url) as client:
                ids = await client.enqueue(COLLECTION, docs, job_size=10)
                deadline = time.monotonic() + 300
                while (await _statuses(client, ids)).count("done") < 2:
                    assert time.monotonic() < deadline, "no job ended"
                    await asyncio.sleep(0.1)
                at_kill = await _statuses(client, ids)
                endpoint.kill()  # SIGKILL: what it acknowledged is in its WAL
                await asyncio.sleep(1.0)
                await asyncio.to_thread(endpoint.start)  # the same folder and port
                return await client.wait(ids, timeout_s=360), at_kill

        outcomes, at_kill = asyncio.run(run())
        log = worker.log.read_text()
    assert at_kill.count("done") < len(at_kill) - 4, at_kill  # the kill came mid-ingest
    assert "failed (attempt 1 of" in log, "the writer never saw the endpoint gone"
    assert all(o.status == "done" for o in outcomes), [(o.status, o.error) for o in outcomes]
    assert all(o.result.errors == [] for o in outcomes)
    assert sum(o.result.documents + o.result.skipped for o in outcomes) == N_DOCS

    with EndpointProcess(tmp_path / "endpoint") as again:  # read back from a fresh start
        client = connect(again.port)
        try:
            audit = audit_collection(client, COLLECTION)  # type: ignore[arg-type]
            assert client.count(COLLECTION, exact=True).count == audit.points
        finally:
            client.close()
    assert audit.documents == {d["id"] for d in docs}
    assert audit.problems() == []  # no chunk missing, none twice
    assert audit.points == audit.expected_points == sum(o.result.points for o in outcomes)
