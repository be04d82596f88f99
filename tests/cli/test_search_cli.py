"""``poolq search`` from the command line: a query that starts with '-' (item 10),
and no worker running answered at once, before the search is queued, not after the 30 s
timeout (item 2)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.redis_stats import command_calls_at

pytestmark = pytest.mark.slow  # the CLI in a subprocess, a real redis-server


def poolq(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "poolq.worker", *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "250"},
    )  # fmt: skip


def test_no_worker_is_answered_at_once(redis_server):
    out = poolq("search", "hello", "--collection", "docs", "--redis-url", redis_server.url)
    assert out.returncode == 3, out.stderr
    assert out.stderr == (
        f"poolq search: error: no worker is running on this Redis (127.0.0.1:{redis_server.port});"
        " start one with `poolq worker`\n"
    )
    # refused before the request is queued: the server never ran an RPUSH or a BLPOP for it
    calls = command_calls_at(redis_server.url)
    assert "rpush" not in calls and "blpop" not in calls, calls


def test_a_query_that_starts_with_a_dash_goes_in_query_or_after_double_dash(redis_server):
    common = ("--collection", "docs", "--redis-url", redis_server.url)
    for args in (("--query", "- Start writing", *common), (*common, "--", "- Start writing")):
        out = poolq("search", *args)
        assert out.returncode == 3, out.stderr  # parsed: it got as far as asking for a worker
        assert "no worker is running" in out.stderr


def test_exactly_one_query_is_required(redis_server):
    common = ("--collection", "docs", "--redis-url", redis_server.url)
    for args in (common, ("a", "--query", "b", *common)):
        out = poolq("search", *args)
        assert out.returncode == 2
        assert out.stderr.count("\n") == 1, out.stderr
        assert "poolq search: error: " in out.stderr and "--query" in out.stderr


def test_help_documents_double_dash():
    out = poolq("search", "--help")
    assert out.returncode == 0 and "--query" in out.stdout
    assert "poolq search --collection docs -- '-" in " ".join(out.stdout.split())
