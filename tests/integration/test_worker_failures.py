"""``poolq worker`` in the first hour of a user: every start-up failure is one line in seconds
(Redis down, a bad Redis or Qdrant URL, a second worker on the same embedded folder: each
refused by its check, before the models load, on the system's answer or the check's own
deadline), the
metrics server stays on loopback unless told otherwise, a running worker logs its reconnect
attempts, and Ctrl-C drains, a second Ctrl-C stops at once with the running jobs back in the
queue for another worker. Real redis-server and worker processes throughout."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis as redis_sync
from arq.constants import in_progress_key_prefix

from poolq.ingest.client import PoolqClient
from poolq.wire import constants
from poolq.wire.connection import CLIENT_CONNECT_DEADLINE_S
from poolq.worker.dev.local_redis import free_port
from poolq.worker.dev.local_worker import WorkerProcess
from tests.integration.test_reliability import (
    assert_exact,
    corpus,
    wait_heartbeat_since,
    wait_running,
)

pytestmark = pytest.mark.slow
COLLECTION = "docs"


def run_worker_cli(*args: str, timeout_s: float = 60) -> tuple[int, list[str]]:
    """``poolq worker ARGS`` as a user runs it: exit code and stderr lines (a worker that got as
    far as its engines logs their threads there first: one line is a refusal before that)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env = {k: v for k, v in env.items() if not k.startswith("POOLQ_")}
    out = subprocess.run(
        [sys.executable, "-m", "poolq.worker", "worker", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
    )
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    return out.returncode, lines


def test_redis_down_at_start_fails_within_seconds_with_one_line(tmp_path):
    port = free_port()  # nothing listens there
    url = f"redis://:hunter2@127.0.0.1:{port}/0"
    rc, lines = run_worker_cli("--redis-url", url, "--qdrant-path", str(tmp_path / "q"))
    assert rc != 0
    assert len(lines) == 1, lines
    (line,) = lines
    assert line.startswith("poolq worker: error: ")
    assert f"Redis is not reachable at 127.0.0.1:{port}: " in line
    assert ": Error 111 " in line, line  # the system's refusal: no deadline waited out
    assert "hunter2" not in line


def test_a_host_that_does_not_resolve_is_one_line_within_seconds(tmp_path):
    rc, lines = run_worker_cli(
        "--redis-url", "redis://no-such-host.invalid:6379", "--qdrant-path", str(tmp_path / "q")
    )
    assert rc != 0
    assert len(lines) == 1, lines
    assert "Redis is not reachable at no-such-host.invalid:6379: " in lines[0]
    # the resolver's answer, or the probe's deadline (a resolver that does not answer)
    by_deadline = f"no answer within {CLIENT_CONNECT_DEADLINE_S:g}s"
    assert ": Error -" in lines[0] or by_deadline in lines[0], lines[0]


def test_a_redis_url_of_another_scheme_is_one_line(tmp_path):
    rc, lines = run_worker_cli(
        "--redis-url", "http://user:pw@localhost:6379", "--qdrant-path", str(tmp_path / "q")
    )
    assert rc != 0
    assert len(lines) == 1, lines
    assert (
        "expected a redis://, rediss:// or unix:// URL, got 'http://***@localhost:6379'"
        in (lines[0])
    )
    assert "pw" not in lines[0].replace("poolq worker", "")


def test_bad_qdrant_urls_are_one_line(redis_server):
    rc, lines = run_worker_cli(
        "--redis-url", redis_server.url, "--qdrant-url", "ftp://qdrant.example:6333"
    )
    assert rc != 0 and len(lines) == 1, lines
    assert "--qdrant-url" in lines[0] and "http://, https://, grpc:// or grpcs://" in lines[0]
    assert "ftp://qdrant.example:6333" in lines[0]

    rc, lines = run_worker_cli(
        "--redis-url", redis_server.url, "--qdrant-url", "http://no-such-host.invalid:6333"
    )
    assert rc != 0 and len(lines) == 1, lines
    # writes go over gRPC, on Qdrant's gRPC port of that host: the port probed
    assert "Qdrant is not reachable at no-such-host.invalid:6334" in lines[0]

    port = free_port()  # nothing listens there
    for url in (f"grpc://127.0.0.1:{port}", f"http://127.0.0.1:{port}"):
        extra = ("--qdrant-transport", "rest") if url.startswith("http") else ()
        rc, lines = run_worker_cli("--redis-url", redis_server.url, "--qdrant-url", url, *extra)
        assert rc != 0 and len(lines) == 1, lines
        assert f"Qdrant is not reachable at 127.0.0.1:{port}" in lines[0]


def _listening(port: int) -> set[str]:
    """The local addresses a TCP socket listens on at ``port`` (from /proc/net/tcp)."""
    out = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        addr, hex_port = local.split(":")
        if int(hex_port, 16) == port and state == "0A":  # LISTEN
            out.add(".".join(str(int(addr[i : i + 2], 16)) for i in (6, 4, 2, 0)))
    return out


def test_a_second_worker_on_the_same_folder_is_refused_before_loading_models(
    redis_server, tmp_path
):
    qpath = tmp_path / "qdrant"
    metrics_port = free_port()
    first = WorkerProcess(redis_server.url, qpath, "--metrics-port", str(metrics_port)).start()
    try:
        # the metrics server listens on loopback only, by default
        assert _listening(metrics_port) == {"127.0.0.1"}
        rc, lines = run_worker_cli("--redis-url", redis_server.url, "--qdrant-path", str(qpath))
        # its one line is all it printed: refused before its engines (and models) started
        assert rc != 0 and len(lines) == 1, lines
        assert first.proc is not None
        assert f"held by another worker (pid {first.proc.pid})" in lines[0]
        assert str(qpath) in lines[0]
        assert first.proc.poll() is None  # the first one is untouched
    finally:
        first.stop()


def _log(worker: WorkerProcess) -> str:
    return worker.log.read_text(errors="replace")


def _wait_for(predicate, timeout_s: float, what: str) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if predicate():
            return time.monotonic() - t0
        time.sleep(0.05)
    raise TimeoutError(what)


def test_a_running_worker_logs_each_reconnect_attempt_and_rides_out_the_outage(
    redis_server, tmp_path
):
    worker = WorkerProcess(redis_server.url, tmp_path / "qdrant").start()
    try:
        redis_server.stop()
        time.sleep(6)
        redis_server.start()
        back_at = time.time()
        wait_heartbeat_since(worker, back_at)
        assert worker.proc is not None and worker.proc.poll() is None
        log = _log(worker)
        attempts = re.findall(r"reconnect attempt (\d+), down for ([\d.]+)s", log)
        print(f"{len(attempts)} reconnect lines, e.g. {attempts[:3]} ... {attempts[-2:]}")
        assert len(attempts) >= 3, log[-3000:]
        waited = [float(s) for _, s in attempts]
        assert waited == sorted(waited) and waited[-1] > waited[0]  # grows through the outage
        assert re.search(r"Redis at 127\.0\.0\.1:\d+ is back after [\d.]+s", log), log[-3000:]
    finally:
        worker.stop()


def _outcomes(url, ids):
    async def go():
        async with PoolqClient(url) as client:
            return {j: await client.outcome(j) for j in ids}

    return asyncio.run(go())


def test_ctrl_c_drains_and_a_second_ctrl_c_puts_the_running_job_back(redis_server, tmp_path):
    qpath = tmp_path / "qdrant"
    metrics_port = free_port()
    a = WorkerProcess(
        redis_server.url, qpath, "--metrics-port", str(metrics_port), "--metrics-host", "0.0.0.0"
    ).start()
    assert _listening(metrics_port) == {"0.0.0.0"}  # --metrics-host widens it
    docs = corpus(200)

    async def enqueue():
        async with PoolqClient(redis_server.url) as client:
            return await client.enqueue(COLLECTION, docs, job_size=200)

    (job_id,) = asyncio.run(enqueue())
    wait_running(redis_server.url, [job_id], at_least=1)
    # arq marks the job in progress in Redis a moment before its task exists in the worker:
    # wait for the job's own first line, or a Ctrl-C in between sees no job running
    _wait_for(lambda: f"job {job_id} ingest try 1 started" in _log(a), 30, "job never started")
    assert a.proc is not None
    a.proc.send_signal(signal.SIGINT)
    said = _wait_for(lambda: "draining" in _log(a), 60, "no draining line after Ctrl-C")
    line = next(x for x in _log(a).splitlines() if "draining" in x)
    print(f"draining logged {said:.2f}s after Ctrl-C: {line}")
    assert "1 job running" in line and "30s" in line
    time.sleep(1)
    assert a.proc.poll() is None  # still draining
    a.proc.send_signal(signal.SIGINT)
    rc = a.proc.wait(60)  # (the drain's grace, 30 s, would also end it: the log says which did)
    print(f"second Ctrl-C: exit {rc}")
    a.stop()
    assert "SIGINT again: stopping now; 1 running job goes back to the queue" in _log(a)
    r = redis_sync.Redis.from_url(redis_server.url)
    try:
        assert r.exists(in_progress_key_prefix + job_id) == 0  # another worker may take it now
        assert r.zscore(constants.INGEST_QUEUE, job_id) is not None  # back in the queue
    finally:
        r.close()
    assert _outcomes(redis_server.url, [job_id])[job_id].status == "queued"
    b = WorkerProcess(redis_server.url, qpath).start()
    try:
        t0 = time.monotonic()
        _wait_for(
            lambda: _outcomes(redis_server.url, [job_id])[job_id].status == "done",
            300,
            "the job never ran again",
        )
        print(f"the job ran again on a new worker and finished in {time.monotonic() - t0:.1f}s")
    finally:
        b.stop()
    assert_exact(qpath, docs)
