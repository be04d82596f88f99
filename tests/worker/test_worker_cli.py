"""``poolq worker --help`` as a user reads it, and where ``/metrics`` listens: loopback by
default (``Settings.metrics_host``), wider only when asked (a real HTTP server, scraped)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request

import pytest

from poolq.wire import constants
from poolq.worker.config.settings import Settings
from poolq.worker.dev.local_redis import free_port
from poolq.worker.observability import metrics


@pytest.fixture(scope="module")
def worker_help() -> str:
    env = {**os.environ, "COLUMNS": "250", "TERM": "dumb"}
    out = subprocess.run(
        [sys.executable, "-m", "poolq.worker", "worker", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", out.stdout).split())


def test_help_shows_the_default_redis_url_and_qdrant_path(worker_help):
    assert f"default {constants.DEFAULT_REDIS_URL}" in worker_help
    assert f"default {constants.DEFAULT_QDRANT_PATH}" in worker_help
    assert "default redis://localhost:6379/0" in worker_help
    assert "default ./poolq_data/qdrant" in worker_help


def test_help_shows_the_metrics_host_and_how_to_stop(worker_help):
    assert "--metrics-host" in worker_help and "default 127.0.0.1" in worker_help
    assert "POOLQ_METRICS_HOST" in worker_help
    assert "a second Ctrl-C stops at once" in worker_help


def _scrape(host: str, port: int) -> int:
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as r:
        return r.status


@pytest.mark.parametrize("host", [None, "0.0.0.0"])
def test_metrics_listen_where_the_settings_say(host):
    port = free_port()
    settings = Settings(metrics_port=port, **({"metrics_host": host} if host else {}))
    served = metrics.start({"settings": settings, "runtime": None})
    assert served is not None
    try:
        assert served._server is not None
        assert served._server.server_address[0] == (host or "127.0.0.1")
        assert _scrape("127.0.0.1", port) == 200
    finally:
        metrics.stop({"metrics": served})
