"""A job reports done only once its points survive a crash: 20 times over, a real `poolq worker`
on a Qdrant Edge folder runs one ingest job and is SIGKILLed the moment arq writes the job's
result (a Redis keyspace notification, not a poll); the folder, reopened, holds every point of
that job, with every vector, and the points of the jobs before it."""

import asyncio
import signal
import time

import pytest
import redis
from arq.constants import result_key_prefix

from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.sinks.points import point_id
from poolq.sinks.store.edge import EdgeStore
from poolq.wire.serialization import deserialize
from poolq.worker.dev.local_worker import WorkerProcess
from tests.audit import audit_collection

pytestmark = pytest.mark.slow
COLLECTION = "durable"
ROUNDS = 20
VECTORS = {"dense", "sparse", "colbert"}


def job_docs(round_: int) -> list[dict]:
    ps = passages(ROUNDS * 6 + 12)
    docs = []
    for i in range(6):
        k = round_ * 6 + i
        text = ps[k] if i else "\n\n".join(ps[k : k + 12])  # one multi-chunk document a job
        docs.append({"id": f"r{round_:02d}-{i}", "text": text, "metadata": {"round": round_}})
    return docs


def kill_when_done(r: redis.Redis, url: str, worker: WorkerProcess, docs: list[dict]) -> dict:
    """Enqueue the job, SIGKILL the worker as soon as its result lands; the job's result."""
    pubsub = r.pubsub()
    pubsub.psubscribe(f"__keyspace@0__:{result_key_prefix}*")
    pubsub.get_message(timeout=5)  # the subscription's confirmation

    async def enqueue() -> str:
        async with PoolqClient(url) as client:
            (job_id,) = await client.enqueue(COLLECTION, docs, job_size=len(docs))
            return job_id

    job_id = asyncio.run(enqueue())
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            msg = pubsub.get_message(timeout=1)
            if msg and msg["type"] == "pmessage" and msg["channel"].decode().endswith(job_id):
                worker.stop(signal.SIGKILL)  # no shutdown hook, no flush, no close
                break
        else:
            raise TimeoutError(f"job {job_id} never reported")
    finally:
        pubsub.close()
    raw = r.get(result_key_prefix + job_id)
    assert raw is not None
    result = deserialize(raw)
    assert result["s"], result  # success
    return result["r"]


# 20 worker starts (model loads) and kills: ~15 s a round on a 2-core machine
@pytest.mark.timeout(900)
def test_points_of_a_job_reported_done_survive_sigkill_20_times(redis_server, tmp_path):
    qpath = tmp_path / "qdrant"
    r = redis.Redis.from_url(redis_server.url)
    r.config_set("notify-keyspace-events", "K$")  # key-space events of string commands
    written: dict[str, int] = {}  # doc id -> chunks, of every job reported done
    try:
        for round_ in range(ROUNDS):
            docs = job_docs(round_)
            worker = WorkerProcess(redis_server.url, qpath).start()
            result = kill_when_done(r, redis_server.url, worker, docs)
            assert result["errors"] == [] and result["documents"] == len(docs)

            store = EdgeStore(qpath)  # the lock went with the process
            try:
                audit = audit_collection(store, COLLECTION)
                mine = {d["id"] for d in docs}
                assert mine <= audit.documents, f"round {round_}: documents lost"
                assert audit.problems() == [], audit.problems()
                chunks = {d: len(audit.chunks[d]) for d in mine}
                assert sum(chunks.values()) == result["points"], (round_, chunks, result)
                ids = [point_id(d, i) for d, n in chunks.items() for i in range(n)]
                records = store.retrieve(COLLECTION, ids, with_vectors=True)
                assert len(records) == result["points"]
                assert all(set(rec.vector) == VECTORS for rec in records)
                written |= chunks
                assert audit.documents == set(written)  # the earlier rounds' points too
                assert audit.points == sum(written.values())
            finally:
                store.close()
    finally:
        r.close()
