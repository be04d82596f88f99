"""``poolq enqueue`` flags and summaries, as a user runs them against a real Redis
with no worker (the test records a job's end as a worker does): ``--priority`` (an unknown value
is one line naming the flag), a job whose every document was refused (exit 1, named), and a
Redis that stays away past ``--redis-outage-limit`` while waiting (exit 4, one line, the jobs
stay queued). The progress line shows an outage and its end."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from redis.asyncio import Redis as AsyncRedis

from poolq.ingest.cli.enqueue_wait import ProgressBar
from poolq.ingest.job_progress import WaitProgress
from poolq.wire import constants
from poolq.wire.serialization import deserialize
from poolq.worker.reliability import job_records
from tests.cli_process import poolq

REFUSED = {
    "points": 0,
    "documents": 0,
    "skipped": 0,
    "errors": [
        {"id": "a", "field": "text", "error": "could not be encoded: boom", "code": "internal"}
    ],
}


def jsonl(path, n: int) -> str:
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": f"t {i}"}) + "\n" for i in range(n)))
    return str(path)


def queued(url: str) -> dict[str, dict]:
    r = redis.Redis.from_url(url)
    try:
        ids = [i.decode() for i in r.zrange(constants.INGEST_QUEUE, 0, -1)]
        return {i: deserialize(r.get(f"arq:job:{i}")) for i in ids}
    finally:
        r.close()


def wait_queued(url: str, n: int, timeout_s: float = 60) -> dict[str, dict]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(jobs := queued(url)) >= n:
            return jobs
        time.sleep(0.05)
    raise TimeoutError("nothing was enqueued")


@pytest.mark.slow
def test_priority_flag(redis_server, tmp_path):
    url = redis_server.url
    r = poolq("enqueue", jsonl(tmp_path / "a.jsonl", 3), "--collection", "c", "--priority",
              "urgent", "--redis-url", url)  # fmt: skip
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--priority: expected one of auto, interactive, bulk, got 'urgent'" in r.stderr
    assert queued(url) == {}
    one = poolq("enqueue", jsonl(tmp_path / "b.jsonl", 3), "--collection", "c", "--redis-url", url)
    assert one.returncode == 0, one.stderr
    (job,) = queued(url).values()
    assert job["k"] == {"force": False, "priority": "interactive"}  # auto, one job
    r = poolq("enqueue", str(tmp_path / "b.jsonl"), "--collection", "c", "--job-size", "1",
              "--priority", "interactive", "--redis-url", url)  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = poolq("enqueue", str(tmp_path / "b.jsonl"), "--collection", "c", "--job-size", "1",
              "--redis-url", url)  # fmt: skip
    lanes = [j["k"]["priority"] for j in queued(url).values()]  # in queue order
    assert lanes == ["interactive"] * 4 + ["bulk"] * 3


@pytest.mark.slow
def test_a_job_whose_every_document_was_refused_fails_the_command(redis_server, tmp_path):
    url = redis_server.url
    src = jsonl(tmp_path / "a.jsonl", 1)
    with ThreadPoolExecutor(1) as pool:
        cli = pool.submit(poolq, "enqueue", src, "--collection", "c", "--wait", "--json",
                          "--redis-url", url, timeout=120)  # fmt: skip
        (job_id,) = wait_queued(url, 1)
        r = redis.Redis.from_url(url)
        r.zrem(constants.INGEST_QUEUE, job_id)  # as a worker ends a job
        r.close()

        async def record():
            client = AsyncRedis.from_url(url)
            await job_records.record_outcome(client, job_id, success=True, result=REFUSED)
            await client.aclose()

        asyncio.run(record())
        out = cli.result(timeout=120)
    assert out.returncode == 1, out.stderr
    summary = json.loads(out.stdout)
    assert summary["refused_jobs"] == 1 and summary["failed_jobs"] == 0
    assert summary["errors"] == REFUSED["errors"]  # each with its code
    assert "document 'a': could not be encoded: boom" in out.stderr
    assert "1 jobs refused every document they were sent" in out.stderr


@pytest.mark.slow
def test_redis_gone_past_the_outage_limit_while_waiting(redis_server, tmp_path):
    url = redis_server.url
    src = jsonl(tmp_path / "a.jsonl", 1)
    with ThreadPoolExecutor(1) as pool:
        cli = pool.submit(poolq, "enqueue", src, "--collection", "c", "--wait",
                          "--redis-outage-limit", "2", "--redis-url", url, timeout=120)  # fmt: skip
        (job_id,) = wait_queued(url, 1)
        time.sleep(1.0)  # (waiting)
        redis_server.stop()
        t0 = time.monotonic()
        out = cli.result(timeout=120)
        seconds = time.monotonic() - t0
    assert out.returncode == 4, out.stderr
    where = f"127.0.0.1:{redis_server.port}"
    errors = [line for line in out.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, out.stderr
    assert f"Redis at {where} has not been reachable for 2." in errors[0]
    assert "(redis_outage_limit_s 2)" in errors[0] and job_id in errors[0]
    assert "the jobs stay queued" in errors[0]
    assert f"Redis at {where} is not reachable: waiting for it" in out.stderr
    assert seconds < 10


def test_a_bad_outage_limit_in_the_environment_is_one_line(tmp_path):
    env = {**os.environ, "POOLQ_REDIS_OUTAGE_LIMIT_S": "soon"}
    r = subprocess.run(
        [sys.executable, "-m", "poolq.worker", "enqueue", jsonl(tmp_path / "a.jsonl", 1),
         "--collection", "c", "--redis-url", "redis://127.0.0.1:1/0"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "POOLQ_REDIS_OUTAGE_LIMIT_S: expected a number of seconds, got 'soon'" in r.stderr


def test_the_progress_line_shows_an_outage_and_its_end(capsys):
    bar = ProgressBar(4, "redis://:secret@10.0.0.1:6390/0", outage_limit_s=300)
    bar.LINE_EVERY_S = 0.0
    p = WaitProgress(2, 0, 0, 4, 1, 3, 3, 0, 0, workers_alive=1)
    bar(p)
    bar(WaitProgress(**(p.as_dict() | {"redis_down_s": 1.5})))
    bar(WaitProgress(**(p.as_dict() | {"redis_down_s": 7.2})))
    bar(WaitProgress(**(p.as_dict() | {"done": 4})))
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "poolq enqueue: 1/4 documents, chunks 3 points 3 errors 0 skipped 0",
        "poolq enqueue: Redis at 10.0.0.1:6390 is not reachable: waiting for it to come back "
        "(giving up after 300s: redis_outage_limit_s; Ctrl-C stops waiting, the jobs stay queued)",
        "poolq enqueue: 1/4 documents, chunks 3 points 3 errors 0 skipped 0 redis_down 2s",
        "poolq enqueue: 1/4 documents, chunks 3 points 3 errors 0 skipped 0 redis_down 7s",
        lines[4],
        "poolq enqueue: 4/4 documents, chunks 3 points 3 errors 0 skipped 0",
    ]
    assert lines[4].startswith("poolq enqueue: Redis at 10.0.0.1:6390 is back after ")
