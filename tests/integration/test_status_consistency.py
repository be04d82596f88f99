"""`poolq status` and `poolq dlq` agree with what a real worker did, and say when no worker is
alive: run as a user runs them, against a real Redis and real worker processes."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
import redis

from poolq.ingest.client import PoolqClient
from poolq.wire import constants
from poolq.worker.dev.local_worker import WorkerProcess

# one process a worker: the encode role (--role all would add its parse process, a worker of
# its own in the listing)
ENCODE = ("--role", "encode")
pytestmark = pytest.mark.slow


def poolq(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "poolq.worker", *args, "--redis-url", url],
        capture_output=True,
        text=True,
        timeout=120,
    )


def status_json(url: str) -> dict[str, Any]:
    r = poolq("status", "--json", url=url)
    assert r.returncode == 0, r.stderr
    (line,) = r.stdout.splitlines()  # JSON lines: one object
    return json.loads(line)


def last_seen(url: str) -> float:
    """When a worker was last seen, as the workers record it (``time.time()``)."""
    r = redis.Redis.from_url(url)
    try:
        ((_, seen),) = r.zrevrange(constants.WORKER_LAST_SEEN_KEY, 0, 0, withscores=True)
    finally:
        r.close()
    return float(seen)


def status_and_age_bounds(url: str, seen: float) -> tuple[dict[str, Any], float, float]:
    """``poolq status --json``, and what its ``last_heartbeat_age_s`` can be when no worker
    was seen after ``seen``: the time since then as the command started and as it ended
    (rounded as the status rounds it)."""
    t0 = time.time()
    st = status_json(url)
    t1 = time.time()
    return st, t0 - seen - 0.05, t1 - seen + 0.05


async def ingest_some(url: str) -> tuple[list[str], list[str]]:
    """Good jobs and jobs whose arguments are bad (failed for good, dead-lettered)."""
    async with PoolqClient(url) as client:
        docs = [{"id": f"d{i}", "text": f"document number {i} about queues"} for i in range(6)]
        good = await client.enqueue("consistency", docs, job_size=2)
        bad = []
        for payload in ("not a list", 42):
            job = await client.redis.enqueue_job("ingest", "consistency", payload)
            assert job is not None
            bad.append(job.job_id)
        outcomes = await client.wait([*good, *bad], timeout_s=240)
    assert [o.status for o in outcomes] == ["done"] * 3 + ["failed"] * 2, outcomes
    return good, bad


def test_status_follows_the_dead_letter_list_and_the_workers(redis_server, tmp_path):
    url = redis_server.url
    worker = WorkerProcess(url, tmp_path / "qdrant", *ENCODE).start()
    try:
        _, bad = asyncio.run(ingest_some(url))
        seen = last_seen(url)  # (a live worker is seen again meanwhile: the age can only shrink)
        st, _, at_most = status_and_age_bounds(url, seen)
        assert set(st) == {"counts", "jobs", "workers", "reindex", "workers_alive",
                           "last_heartbeat_age_s"}  # fmt: skip
        assert (st["counts"]["done"], st["counts"]["failed"], st["counts"]["queued"]) == (3, 2, 0)
        assert st["workers_alive"] == 1 and 0 <= st["last_heartbeat_age_s"] <= at_most, st

        listed = poolq("dlq", "list", "--json", url=url).stdout.splitlines()
        entries = [json.loads(line) for line in listed]
        assert sorted(e["job_id"] for e in entries) == sorted(bad)
        r = poolq("dlq", "drop", "--all", url=url)
        assert r.returncode == 0, r.stderr
        st = status_json(url)
        assert (st["counts"]["done"], st["counts"]["failed"]) == (3, 0)
        # a given job still reports how it ended
        per_job = poolq("status", bad[0], "--json", url=url)
        (job,) = json.loads(per_job.stdout)["jobs"]
        assert job["job_id"] == bad[0] and job["status"] == "failed" and job["error"]
        plain = poolq("status", url=url)
        assert "3 done, 0 failed" in plain.stdout and "1 worker alive" in plain.stdout

        worker.stop(signal.SIGKILL)  # no final heartbeat: its key expires after 10 s
        deadline = time.monotonic() + 60
        while status_json(url)["workers_alive"] and time.monotonic() < deadline:
            time.sleep(0.5)
        st, at_least, at_most = status_and_age_bounds(url, last_seen(url))  # (seen no more)
        assert st["workers_alive"] == 0 and st["workers"] == []
        # the age of its last heartbeat, as recorded before it died
        assert at_least <= st["last_heartbeat_age_s"] <= at_most, (st, at_least, at_most)
        plain = poolq("status", url=url)
        assert plain.returncode == 0
        assert re.search(r"^no worker alive \(last heartbeat \d+s ago\)$", plain.stdout, re.M), (
            plain.stdout
        )
    finally:
        worker.stop()

    # a worker stopped cleanly leaves a final heartbeat saying so: listed, but not alive
    worker = WorkerProcess(url, tmp_path / "qdrant", *ENCODE).start()
    worker.stop()
    st, at_least, at_most = status_and_age_bounds(url, last_seen(url))  # its final heartbeat
    assert st["workers_alive"] == 0
    assert at_least <= st["last_heartbeat_age_s"] <= at_most, (st, at_least, at_most)
    assert [w.get("stopped") for w in st["workers"]] == [True]
    plain = poolq("status", url=url)
    assert "no worker alive (last heartbeat" in plain.stdout and "(stopped)" in plain.stdout


def test_status_on_a_redis_no_worker_ever_used(redis_server):
    st = status_json(redis_server.url)
    assert st["workers_alive"] == 0 and st["last_heartbeat_age_s"] is None
    plain = poolq("status", url=redis_server.url)
    assert plain.returncode == 0
    assert "no worker alive: none has sent a heartbeat to this Redis" in plain.stdout
