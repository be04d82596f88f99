"""``poolq dashboard`` as a user starts it: the URL it prints, the warning for a non-local
address without a token (and none with one), and the sync client's cancel."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from poolq.ingest.client import SyncPoolqClient
from poolq.wire.job_plan import Limits
from poolq.worker.dev.local_redis import free_port

pytestmark = pytest.mark.slow


def started(redis_url: str, *args: str, token: str | None = None) -> str:
    """What the command printed once it serves (it is stopped then)."""
    env = {k: v for k, v in os.environ.items() if k != "POOLQ_DASHBOARD_TOKEN"}
    if token:
        env["POOLQ_DASHBOARD_TOKEN"] = token
    cmd = [sys.executable, "-m", "poolq.worker", "dashboard", "--redis-url", redis_url, *args]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        lines.append(line)
        if "poolq dashboard: http" in line:
            break
    proc.terminate()
    proc.wait(10)
    return "".join(lines)


def test_a_local_bind_prints_its_url_and_says_read_only(redis_server):
    port = free_port()
    out = started(redis_server.url, "--port", str(port))
    assert f"http://127.0.0.1:{port}/ (read-only (no --token))" in out
    assert "warning" not in out


def test_a_public_bind_without_a_token_warns_naming_the_risk(redis_server):
    out = started(redis_server.url, "--host", "0.0.0.0", "--port", str(free_port()))
    assert "warning: serving on 0.0.0.0, not a local address, without a token" in out
    assert "anyone who can reach it sees every job" in out
    quiet = started(redis_server.url, "--host", "0.0.0.0", "--port", str(free_port()), token="t")
    assert "warning" not in quiet and "actions need the token" in quiet


def test_the_sync_client_cancels_a_queued_job(redis_server):
    with SyncPoolqClient(redis_server.url) as client:
        (job_id,) = client.enqueue("docs", [{"id": "a", "text": "x"}], limits=Limits())
        assert client.cancel(job_id).state == "cancelled"
        assert client.status([job_id]).jobs[0].status == "cancelled"
        assert client.cancel("no-such-job").state == "not_found"


def test_direct_search_runs_here_and_names_a_missing_folder(redis_server, tmp_path):
    """``--direct``: the search page uses ``poolq search --direct``'s search (settings read
    when it runs); a folder that is not there is named in every mode, nothing loaded."""
    from starlette.testclient import TestClient

    from poolq.ingest.dashboard.app import create_app
    from poolq.worker.cli.search import direct_search

    missing = tmp_path / "no-such-folder"
    direct = direct_search(None, redis_server.url, None, missing, None)
    app = create_app(redis_server.url, direct=direct)
    with TestClient(app, base_url="http://127.0.0.1") as tc:
        page = tc.get("/search?q=hello&collection=docs").text
        assert page.count("no embedded Qdrant folder") == 4
        r = tc.get("/api/search?q=hello&collection=docs&mode=dense")
        assert r.status_code == 400 and str(missing) in r.json()["error"]
