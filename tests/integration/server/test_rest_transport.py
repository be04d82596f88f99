"""``--qdrant-transport rest`` (``POOLQ_QDRANT_TRANSPORT=rest``) pointed at a port that speaks
only gRPC (the endpoint's, as a real server's 6334): the command fails in seconds with one line
naming the address and the transport (``sinks/store/probe.py``: one real request in the chosen
protocol), instead of a worker that starts and then fails every job with a protocol error, or
a traceback from ``poolq export``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from poolq.worker.dev.local_worker import WorkerProcess

pytestmark = pytest.mark.slow


def rest_url(endpoint) -> str:
    return f"http://127.0.0.1:{endpoint.port}"


def assert_one_line_error(text: str, command: str, endpoint) -> None:
    assert "Traceback" not in text, text
    last = text.strip().splitlines()[-1]
    assert last.startswith(f"poolq {command}: error:"), text
    assert f"127.0.0.1:{endpoint.port}" in last and "rest" in last.lower(), last


@pytest.mark.timeout(120)
def test_worker_with_rest_on_a_grpc_port_fails_fast(redis_url, endpoint, workdir):
    other_db = redis_url.rsplit("/", 1)[0] + "/7"  # not the package worker's queue
    worker = WorkerProcess(
        other_db, workdir / "rest", "--qdrant-transport", "rest", qdrant_url=rest_url(endpoint)
    )
    try:
        worker.start(ready_timeout_s=60)  # RuntimeError when the process exits first
        started = True
    except RuntimeError:
        started = False  # it exited by itself, before a heartbeat
    finally:
        worker.stop()
    log = worker.log.read_text()
    assert not started, f"the worker started and reported ready:\n{log}"
    # refused before the models load: its one line is all it logged (a worker that got as far
    # as its engines logs their threads first, then " ready:")
    assert len(log.strip().splitlines()) == 1 and " ready:" not in log, log
    assert_one_line_error(log, "worker", endpoint)


@pytest.mark.timeout(60)
def test_export_with_rest_on_a_grpc_port_is_one_line(endpoint):
    out = subprocess.run(
        [sys.executable, "-m", "poolq.worker", "export", "--collection", "kb",
         "--qdrant-url", rest_url(endpoint), "-o", "-"],
        capture_output=True, text=True, timeout=50,
        env={**os.environ, "POOLQ_QDRANT_TRANSPORT": "rest"},
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert_one_line_error(out.stderr, "export", endpoint)
