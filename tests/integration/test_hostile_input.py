"""Hostile and malformed jobs against a running worker process: random payloads (hypothesis),
raw garbage, oversized payloads and too many documents are each answered with an error; the
worker never crashes or wedges, and logs carry job ids but no secrets and no document text."""

import asyncio
import json
import os
import time
import uuid

import pytest
from arq.constants import job_key_prefix
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from poolq.ingest.client import PoolqClient
from poolq.wire import constants
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

pytestmark = pytest.mark.slow
SECRET = "s3cr3t-" + uuid.uuid4().hex[:8]
MARKER_TEXT = "Zanzibar marmalade protocol " + uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    server = LocalRedis(tmp / "redis", password=SECRET).start()
    worker = WorkerProcess(
        server.url,
        tmp / "qdrant",
        "--log-format",
        "json",
        env={
            "POOLQ_MAX_JOB_BYTES": "200000",
            "POOLQ_MAX_DOCUMENTS_PER_JOB": "50",
            "POOLQ_SOURCE_ROOTS": str(tmp / "sources"),
        },
    ).start()
    loop = asyncio.new_event_loop()
    client = loop.run_until_complete(PoolqClient(server.url).connect())
    yield server, worker, loop, client
    loop.run_until_complete(client.close())
    loop.close()
    worker.stop()
    server.stop()


def run_job(env, function, *args, timeout_s=60):
    _, worker, loop, client = env

    async def go():
        job_id = uuid.uuid4().hex
        await client.redis.enqueue_job(function, *args, _job_id=job_id)
        return (await client.wait([job_id], timeout_s=timeout_s))[0]

    outcome = loop.run_until_complete(go())
    assert worker.proc is not None and worker.proc.poll() is None, "the worker died"
    return outcome


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats() | st.text(max_size=20)
    | st.binary(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


@given(
    function=st.sampled_from(["ingest", "reindex", "no_such_function"]),
    args=st.lists(json_values, max_size=4),
)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_random_payloads_are_answered_with_errors(env, function, args):
    outcome = run_job(env, function, *args)
    assert outcome.status in ("done", "failed")
    if outcome.status == "failed":
        assert outcome.error  # a message, not a crash


def test_garbage_bytes_and_pickles_are_refused(env):
    _, _, loop, client = env
    import pickle

    async def raw(payload: bytes):
        job_id = uuid.uuid4().hex
        await client.redis.set(job_key_prefix + job_id, payload)
        await client.redis.zadd(constants.INGEST_QUEUE, {job_id: int(time.time() * 1000)})
        return (await client.wait([job_id], timeout_s=60))[0]

    for payload in (os.urandom(64), b"", pickle.dumps({"t": "ingest"}), b"\xc1" * 10):
        outcome = loop.run_until_complete(raw(payload))
        assert outcome.status == "failed", payload
        assert (
            "expired" in outcome.error
            or "not msgpack" in outcome.error
            or ("not an arq job" in outcome.error)
        )


def test_limits_per_job_and_per_document(env):
    big = [{"id": "big", "text": "word " * 60_000}]  # 300 kB > POOLQ_MAX_JOB_BYTES
    outcome = run_job(env, "ingest", "c", big)
    assert outcome.status == "failed" and "over the limit of 200000 bytes" in outcome.error
    many = [{"id": f"d{i}", "text": "x"} for i in range(51)]
    outcome = run_job(env, "ingest", "c", many)
    assert outcome.status == "failed" and "exceeds the limit of 50" in outcome.error
    # the worker still does real work after all of that
    outcome = run_job(env, "ingest", "c", [{"id": "ok", "text": MARKER_TEXT}])
    assert outcome.status == "done" and outcome.result.points == 1


def test_logs_carry_job_ids_but_no_secrets_and_no_document_text(env):
    _, worker, _, _ = env
    run_job(env, "ingest", "c", [{"id": "ok2", "text": MARKER_TEXT}])
    lines = worker.log.read_text().splitlines()
    records = [json.loads(x) for x in lines if x.startswith("{")]
    assert records, "no JSON log lines"
    text = worker.log.read_text()
    assert SECRET not in text
    assert MARKER_TEXT not in text
    jobs = [r for r in records if r.get("logger") == "poolq.jobs"]
    assert jobs and all("job_id" in r and "function" in r for r in jobs)
