"""Failures with real processes: a worker SIGKILLed mid-job, SIGTERM during work, Redis
restarted mid-run. In every case each job ends done and the collection holds exactly the
expected points (every chunk of every document once, no gaps, nothing extra)."""

import asyncio
import signal
import time

import pytest

from poolq.ingest.client import PoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.sinks.store.edge import EdgeStore
from poolq.wire.records.codes import ErrorCode
from poolq.worker.dev.local_worker import WorkerProcess
from tests.audit import audit_collection

pytestmark = pytest.mark.slow
COLLECTION = "docs"
# these tests need several jobs running at once (a crash or a stop mid-way through them): a
# bound past the backlog lets admission take them all (runtime/admission.py)
MANY_RUNNING = {"POOLQ_MAX_QUEUED_TOKENS": "100000000"}


def corpus(n, prefix="doc"):
    ps = passages(n + 20)
    docs = []
    for i in range(n):
        text = ps[i] if i % 8 else "\n\n".join(ps[i : i + 10])  # some multi-chunk documents
        docs.append({"id": f"{prefix}-{i:03d}", "text": text, "metadata": {"n": i}})
    return docs


def assert_exact(qpath, docs):
    """Every document's chunks 0..count-1 exactly once, and nothing else."""
    store = EdgeStore(qpath)
    try:
        audit = audit_collection(store, COLLECTION)
    finally:
        store.close()
    assert audit.documents == {d["id"] for d in docs}
    assert audit.problems() == []
    assert audit.points == audit.expected_points
    return audit.points


async def _enqueue(url, docs, job_size):
    async with PoolqClient(url) as client:
        return await client.enqueue(COLLECTION, docs, job_size=job_size)


async def _wait(url, ids, timeout_s=900):
    async with PoolqClient(url) as client:
        return await client.wait(ids, timeout_s=timeout_s)


def wait_running(url, ids, at_least, timeout_s=300):
    async def go():
        async with PoolqClient(url) as client:
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                outcomes = await asyncio.gather(*(client.outcome(j) for j in ids))
                if sum(o.status == "running" for o in outcomes) >= at_least:
                    return [o.job_id for o in outcomes if o.status == "running"]
                if all(o.status in ("done", "failed") for o in outcomes):
                    raise AssertionError("the jobs finished before enough were seen running")
                await asyncio.sleep(0.1)
            raise TimeoutError("jobs never started")

    return asyncio.run(go())


def wait_heartbeat_since(worker: WorkerProcess, since: float, timeout_s: float = 120) -> None:
    """Until ``worker`` has written a heartbeat stamped after ``since`` (``time.time()``)."""
    deadline = time.monotonic() + timeout_s
    while worker.stats()["seen_at"] <= since:
        assert time.monotonic() < deadline, f"no heartbeat since {since}"
        time.sleep(0.1)


def test_sigkill_mid_job_loses_nothing(redis_server, tmp_path):
    docs = corpus(200)
    qpath = tmp_path / "qdrant"
    a = WorkerProcess(redis_server.url, qpath, "--max-jobs", "4", env=MANY_RUNNING).start()
    killed = a.stats()["worker_id"]
    ids = asyncio.run(_enqueue(redis_server.url, docs, job_size=10))
    running = wait_running(redis_server.url, ids, at_least=2)
    a.stop(signal.SIGKILL)
    b = WorkerProcess(redis_server.url, qpath).start()
    try:
        outcomes = asyncio.run(_wait(redis_server.url, ids))
    finally:
        b.stop()
    assert all(o.status == "done" for o in outcomes), [o.error for o in outcomes]
    total = assert_exact(qpath, docs)
    # the killed worker's jobs ran again because a live worker handed them back once its
    # heartbeat expired (the reaper says so, naming each), not after arq's job timeout (300 s)
    log = b.log.read_text(errors="replace")
    dead = [x for x in log.splitlines() if f"worker {killed} has no heartbeat: handed back" in x]
    for job_id in running:
        orphan = f"job {job_id} was marked running by no live worker: handed back"
        assert any(job_id in x for x in dead) or orphan in log, (job_id, log[-3000:])
    print(f"SIGKILL: {len(running)} jobs handed back by the reaper; {total} points")


def test_sigterm_during_work_loses_no_job(redis_server, tmp_path):
    docs = corpus(160)
    qpath = tmp_path / "qdrant"
    a = WorkerProcess(
        redis_server.url, qpath, "--max-jobs", "4", "--shutdown-grace", "60", env=MANY_RUNNING
    ).start()
    ids = asyncio.run(_enqueue(redis_server.url, docs, job_size=10))
    running = wait_running(redis_server.url, ids, at_least=2)
    rc = a.stop(signal.SIGTERM, timeout_s=120)
    assert rc == 0

    # the jobs that were running when SIGTERM came finished before the worker exited, and
    # the worker took no new ones
    async def states():
        async with PoolqClient(redis_server.url) as client:
            return {j: (await client.outcome(j)).status for j in ids}

    after_exit = asyncio.run(states())
    assert all(after_exit[j] == "done" for j in running), after_exit
    assert "running" not in after_exit.values()
    assert list(after_exit.values()).count("queued") > 0  # it stopped taking jobs
    b = WorkerProcess(redis_server.url, qpath).start()
    try:
        outcomes = asyncio.run(_wait(redis_server.url, ids))
    finally:
        b.stop()
    assert all(o.status == "done" for o in outcomes)
    assert_exact(qpath, docs)


def test_sigterm_past_the_grace_period_returns_jobs_to_the_queue(redis_server, tmp_path):
    docs = corpus(120)
    qpath = tmp_path / "qdrant"
    a = WorkerProcess(
        redis_server.url, qpath, "--max-jobs", "8", "--shutdown-grace", "0", env=MANY_RUNNING
    ).start()
    ids = asyncio.run(_enqueue(redis_server.url, docs, job_size=10))
    running = wait_running(redis_server.url, ids, at_least=3)
    a.stop(signal.SIGTERM, timeout_s=120)
    b = WorkerProcess(redis_server.url, qpath).start()
    try:
        outcomes = asyncio.run(_wait(redis_server.url, ids, timeout_s=600))
    finally:
        b.stop()
    assert all(o.status == "done" for o in outcomes), [o.error for o in outcomes]
    assert len(running) >= 3
    assert_exact(qpath, docs)


def test_redis_restart_mid_run_loses_no_job(redis_server, tmp_path):
    docs = corpus(160)
    qpath = tmp_path / "qdrant"
    a = WorkerProcess(redis_server.url, qpath, "--max-jobs", "4").start()
    try:
        ids = asyncio.run(_enqueue(redis_server.url, docs, job_size=10))
        wait_running(redis_server.url, ids, at_least=1)
        for _ in range(3):  # several restarts, to hit different moments of the poll loop
            redis_server.restart()
            back_at = time.time()
            time.sleep(1.5)
        outcomes = asyncio.run(_wait(redis_server.url, ids, timeout_s=240))
        assert a.proc is not None and a.proc.poll() is None  # rode it out
        wait_heartbeat_since(a, back_at)  # heartbeats again
    finally:
        a.stop()
    assert all(o.status == "done" for o in outcomes), [o.error for o in outcomes]
    assert_exact(qpath, docs)


def test_a_job_whose_last_try_dies_with_its_worker_is_dead_lettered(redis_server, tmp_path):
    from poolq.wire import dead_letters

    qpath = tmp_path / "qdrant"
    env = {"POOLQ_MAX_TRIES": "1"}
    a = WorkerProcess(redis_server.url, qpath, env=env).start()
    (job_id,) = asyncio.run(_enqueue(redis_server.url, corpus(200), job_size=200))
    wait_running(redis_server.url, [job_id], at_least=1)
    a.stop(signal.SIGKILL)
    b = WorkerProcess(redis_server.url, qpath, env=env).start()
    try:
        (outcome,) = asyncio.run(_wait(redis_server.url, [job_id], timeout_s=120))

        async def dlq():
            async with PoolqClient(redis_server.url) as client:
                return await dead_letters.entries(client.redis)

        entries = asyncio.run(dlq())
    finally:
        b.stop()
    assert outcome.status == "failed" and "max 1 retries exceeded" in outcome.error
    assert outcome.code == ErrorCode.INTERNAL  # arq's own failure: internal
    (entry,) = entries
    assert entry.code == ErrorCode.INTERNAL  # the worker died: internal
    assert entry.job_id == job_id and entry.function == "ingest" and entry.tries == 1
    assert "died during the job's last try" in entry.error
    assert entry.args[0] == COLLECTION and len(entry.args[1]) == 200  # retryable as it was
