"""``poolq enqueue --wait`` rides out a Redis restart as the worker does. A real
redis-server with append-only persistence on a free port in a temp folder, a real worker, the
CLI in its own process; Redis is stopped for 15 s while the jobs run and started again on the
same port and folder: the CLI says Redis is down and back, exits 0, every document landed
exactly once, and the worker is still running."""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis as redis_sync

from poolq.wire import constants
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.cli_process import poolq
from tests.integration.test_reliability import (
    COLLECTION,
    assert_exact,
    corpus,
    wait_heartbeat_since,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
OUTAGE_S = 15.0


def jobs_done(url: str) -> int:
    r = redis_sync.Redis.from_url(url)
    try:
        return int(r.zcard(constants.JOB_INDEX_DONE_KEY))
    finally:
        r.close()


def test_enqueue_wait_rides_out_a_15s_redis_restart(tmp_path):
    docs = corpus(40)
    src = tmp_path / "docs.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs))
    server = LocalRedis(tmp_path / "redis").start()  # --appendonly yes, in its own folder
    qpath = tmp_path / "qdrant"
    worker = WorkerProcess(server.url, qpath, "--max-jobs", "2")
    pool = ThreadPoolExecutor(1)
    try:
        worker.start()
        args = ["enqueue", str(src), "--collection", COLLECTION, "--job-size", "2", "--wait"]
        cli = pool.submit(poolq, *args, "--json", "--redis-url", server.url, timeout=900)
        t0 = time.monotonic()
        while jobs_done(server.url) < 1:  # the jobs are under way
            assert time.monotonic() < t0 + 600 and not cli.done(), "no job ended"
            time.sleep(0.1)
        print(f"first job done after {time.monotonic() - t0:.1f}s")
        assert jobs_done(server.url) < 20, "every job ended before the outage"
        server.stop()  # a restart: SIGTERM (Redis writes its append-only file)
        t_down = time.monotonic()
        time.sleep(OUTAGE_S)
        assert not cli.done(), cli.result().stderr
        server.start()  # same port, same folder
        back_at = time.time()
        r = cli.result(timeout=600)
        since_down_s = time.monotonic() - t_down
        print(f"the CLI ended {time.monotonic() - t0:.1f}s after the first job")
        assert worker.proc is not None and worker.proc.poll() is None, worker.log.read_text()
        wait_heartbeat_since(worker, back_at)  # the worker heartbeats again
    finally:
        pool.shutdown(wait=False)
        worker.stop()
        server.stop()
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["failed_jobs"] == 0 and summary["errors"] == []
    assert summary["documents"] + summary["skipped"] == len(docs)
    where = f"127.0.0.1:{server.port}"
    down = r.stderr.find(f"Redis at {where} is not reachable: waiting for it")
    back = re.search(rf"Redis at {re.escape(where)} is back after ([\d.]+)s", r.stderr)
    # said down, then back, after an outage it measured within the one the test made
    assert back and 0 <= down < back.start(), r.stderr
    assert 0 < float(back.group(1)) <= since_down_s, (r.stderr, since_down_s)
    points = assert_exact(qpath, docs)  # every document, each chunk once
    assert summary["points"] == points, (summary, points)
