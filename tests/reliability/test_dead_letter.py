"""The dead-letter list and the failed count of ``poolq status`` agree: jobs failed for good by
the real job guard on a real ``redis-server``, then ``poolq dlq`` and ``poolq status`` run as a
user runs them (subprocesses). ``--json`` prints JSON lines: one object per line."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest
from redis.asyncio import Redis

from poolq.wire import constants
from poolq.worker.reliability.job_guard import guarded


def poolq(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "poolq.worker", *args, "--redis-url", url],
        capture_output=True,
        text=True,
        timeout=60,
    )


def json_lines(out: str) -> list[dict[str, Any]]:
    lines = out.splitlines()
    return [json.loads(line) for line in lines]


def status_counts(url: str) -> dict[str, int]:
    r = poolq("status", "--json", url=url)
    assert r.returncode == 0, r.stderr
    (line,) = r.stdout.splitlines()  # one object, on one line
    return json.loads(line)["counts"]


async def fail_for_good(redis: Redis, job_id: str, collection: str) -> None:
    """A job whose documents are bad: the guard dead-letters it on its first try."""

    async def ingest(ctx: dict[str, Any], collection: str, documents: Any) -> None:
        raise ValueError(f"documents: expected a list, got {type(documents).__name__}")

    rt = SimpleNamespace(worker_id="w-dlq", jobs_retried=0, jobs_failed=0)
    ctx = {"job_id": job_id, "job_try": 1, "redis": redis, "runtime": rt}
    with pytest.raises(ValueError):
        await guarded(ingest, name=constants.INGEST_JOB, max_tries=3)(ctx, collection, "nope")


async def test_dropping_and_retrying_dead_letters_leave_the_failed_count(redis_server):
    url = redis_server.url
    redis = Redis.from_url(url)
    try:
        for i in range(3):
            await fail_for_good(redis, f"bad-{i}", "c")
    finally:
        await redis.aclose()
    assert status_counts(url)["failed"] == 3

    listed = poolq("dlq", "list", "--json", url=url)
    assert listed.returncode == 0, listed.stderr
    entries = json_lines(listed.stdout)
    assert [e["job_id"] for e in entries] == ["bad-0", "bad-1", "bad-2"]
    assert entries[0]["function"] == "ingest" and entries[0]["args"] == ["c", "nope"]
    assert entries[0]["code"] == "bad_request"
    assert entries[0]["error"].endswith(": documents: expected a list, got str")

    retried = poolq("dlq", "retry", "bad-1", "--json", url=url)
    assert retried.returncode == 0, retried.stderr
    ((line),) = json_lines(retried.stdout)
    assert line["job_id"] == "bad-1" and line["new_job_id"].startswith("bad-1~retry-")
    counts = status_counts(url)
    assert (counts["failed"], counts["queued"]) == (2, 1)  # the new job waits in the queue

    dropped = poolq("dlq", "drop", "--all", "--json", url=url)
    assert dropped.returncode == 0, dropped.stderr
    assert json_lines(dropped.stdout) == [{"job_id": "bad-0"}, {"job_id": "bad-2"}]
    assert status_counts(url)["failed"] == 0
    empty = poolq("dlq", "list", "--json", url=url)
    assert empty.returncode == 0 and empty.stdout == ""  # no entries: no lines
    plain = poolq("dlq", "list", url=url)
    assert "the dead-letter list is empty" in plain.stdout

    # the retried job is in arq's queue
    redis = Redis.from_url(url)
    try:
        assert await redis.zcard(constants.INGEST_QUEUE) == 1
    finally:
        await redis.aclose()

    missing = poolq("dlq", "drop", "nope", url=url)
    assert missing.returncode == 1
    assert missing.stderr.strip() == "poolq dlq drop: error: not in the dead-letter list: nope"


async def test_a_dead_lettered_parse_job_is_retried_on_the_parse_queue(redis_server):
    url = redis_server.url
    redis = Redis.from_url(url)

    async def parse(ctx: dict[str, Any], collection: str, files: Any) -> None:
        raise ValueError(f"files: expected a list, got {type(files).__name__}")

    rt = SimpleNamespace(worker_id="w-parse", jobs_retried=0, jobs_failed=0)
    ctx = {"job_id": "bad-parse", "job_try": 1, "redis": redis, "runtime": rt}
    try:
        with pytest.raises(ValueError):
            await guarded(parse, name=constants.PARSE_JOB, max_tries=3)(ctx, "c", "nope")
        retried = poolq("dlq", "retry", "bad-parse", "--json", url=url)
        assert retried.returncode == 0, retried.stderr
        (line,) = json_lines(retried.stdout)
        assert await redis.zrange(constants.PARSE_QUEUE, 0, -1) == [line["new_job_id"].encode()]
        assert await redis.zcard(constants.INGEST_QUEUE) == 0
    finally:
        await redis.aclose()
