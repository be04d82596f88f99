"""the summary of a job whose worker was SIGKILLed mid-ingest counts what the crashed
try wrote as written, not as skipped (unchanged): the retry leaves those documents alone (no
model work), and the job's result adds them (documents, and their chunks as points) to what it
wrote itself. A later job with the same documents skips them all, as before; a job whose every
document is refused ends ``refused``, not done. A real redis-server, real worker processes, a
real crash."""

from __future__ import annotations

import asyncio
import json
import signal
import time

import pytest

from poolq.worker.dev.local_worker import WorkerProcess
from tests.cli_process import poolq
from tests.integration.test_ingest_skip import progress_of
from tests.integration.test_reliability import _enqueue, _wait, assert_exact, corpus

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


def wait_part_written(
    url: str, job_id: str, total: int, worker: WorkerProcess, timeout_s: float = 600
) -> dict:
    """The job's progress once some documents are written and others not yet."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        p, _ = progress_of(url, job_id)
        if p.get("points", 0) > 0 and p.get("done", 0) < total:
            return p
        assert p.get("done", 0) < total, f"the job ended before the kill: {p}"
        time.sleep(0.01)
    raise TimeoutError(f"the job wrote nothing: {p}\n{worker.log.read_text()[-3000:]}")


def test_a_retry_after_sigkill_counts_the_crashed_tries_writes_as_written(redis_server, tmp_path):
    docs = corpus(200)
    qpath = tmp_path / "qdrant"
    url = redis_server.url
    a = WorkerProcess(url, qpath).start()
    try:
        (job_id,) = asyncio.run(_enqueue(url, docs, job_size=200))
        at_kill = wait_part_written(url, job_id, len(docs), a)
    finally:
        a.stop(signal.SIGKILL)
    b = WorkerProcess(url, qpath).start()
    try:
        (outcome,) = asyncio.run(_wait(url, [job_id], timeout_s=600))
        # the same documents again, in a new job: unchanged, all skipped
        (again_id,) = asyncio.run(_enqueue(url, docs, job_size=200))
        (again,) = asyncio.run(_wait(url, [again_id], timeout_s=600))
        # a job whose every document is refused ends "refused", not done
        bad = [{"id": "no-text"}, {"id": "number", "text": 5}]
        (bad_id,) = asyncio.run(_enqueue(url, bad, job_size=10))
        (refused,) = asyncio.run(_wait(url, [bad_id], timeout_s=600))
        status = poolq("status", bad_id, "--json", "--redis-url", url)
        text = poolq("status", bad_id, "--redis-url", url)
    finally:
        b.stop()
    points = assert_exact(qpath, docs)
    assert outcome.status == "done", outcome.error
    r = outcome.result
    print(f"killed with {at_kill['done']} documents written; the retry's result: {r}")
    assert (r.documents, r.skipped, r.errors) == (len(docs), 0, [])
    assert r.points == points
    assert again.status == "done"
    assert (again.result.documents, again.result.points) == (0, 0)
    assert again.result.skipped == len(docs)
    assert refused.status == "refused", refused
    assert [e.id for e in refused.result.errors] == ["no-text", "number"]
    assert (refused.result.documents, refused.result.points) == (0, 0)
    st = json.loads(status.stdout)
    assert st["counts"]["refused"] == 1 and st["counts"]["done"] == 0
    assert st["jobs"][0]["status"] == "refused"
    assert text.stdout.startswith("jobs: 0 queued, 0 running, 0 done, 0 failed (1 refused)")
    assert f"  {bad_id}  refused " in text.stdout
