"""Every client command answers a Redis URL it cannot use, a host that does not exist and a Redis
that is down with one line, in seconds, naming where the URL came from or host:port: the URL
refused before any connection, the others by the connect itself (the system's answer, or the
client's connect deadline), never by riding out an outage."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from poolq.wire.connection import CLIENT_CONNECT_DEADLINE_S
from poolq.worker.dev.local_redis import free_port

pytestmark = pytest.mark.slow  # the CLI in subprocesses


def commands(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "x"}\n')
    return {
        "enqueue": ["enqueue", str(src), "--collection", "c"],
        "status": ["status"],
        "search": ["search", "hello", "--collection", "c"],
        "dlq": ["dlq", "list"],
        "reindex": ["reindex", "--source", str(src), "--collection", "c"],
    }


def poolq(args, env=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "poolq.worker", *args], capture_output=True, text=True, timeout=60,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def one_line(out, name):
    assert out.returncode in (2, 3), (name, out.returncode, out.stderr)
    assert out.stderr.count("\n") == 1, (name, out.stderr)
    assert out.stderr.startswith(f"poolq {name if name != 'dlq' else 'dlq list'}: error: ") or (
        out.stderr.startswith(f"poolq {name}: error: ")
    ), out.stderr
    return out.stderr


def test_a_url_that_is_not_redis_names_its_origin(tmp_path):
    for name, args in commands(tmp_path).items():
        out = poolq([*args, "--redis-url", "http://:s3cret@localhost:6379/0"])
        line = one_line(out, name)
        assert "--redis-url" in line and "redis://" in line and "s3cret" not in line, line
        assert "not reachable" not in line  # the URL refused as it is: nothing connected
        out = poolq(args, env={"POOLQ_REDIS_URL": "localhost:6379"})
        assert "POOLQ_REDIS_URL" in one_line(out, name)
        out = poolq([*args, "--redis-url", "redis://localhost:notaport/0"])
        assert "--redis-url" in one_line(out, name) and "port" in out.stderr


def test_a_host_that_does_not_exist_and_a_redis_that_is_down(tmp_path):
    port = free_port()
    by_deadline = f"no answer within {CLIENT_CONNECT_DEADLINE_S:g}s"
    for name, args in commands(tmp_path).items():
        out = poolq([*args, "--redis-url", "redis://no-such-host.invalid:6379/0"])
        line = one_line(out, name)
        # refused by the connect: the resolver's answer, or the connect deadline (a resolver
        # that does not answer), not after an outage was waited out ("has not been reachable")
        assert "Redis is not reachable at no-such-host.invalid:6379 (" in line, line
        assert ": Error -" in line or by_deadline in line, line
        out = poolq([*args, "--redis-url", f"redis://127.0.0.1:{port}/0"])
        line = one_line(out, name)
        assert f"Redis is not reachable at 127.0.0.1:{port} (" in line, line
        assert ": Error 111 " in line, line  # the system refused the connection: no wait
