"""Connection settings and logs: TLS and AUTH for Redis, no secrets in reprs or log lines."""

import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from poolq.ingest.client import PoolqClient
from poolq.sinks.writer import QdrantWriter
from poolq.wire import constants
from poolq.wire.connection import redis_settings
from poolq.wire.serialization import serialize
from poolq.worker.config.settings import Settings
from poolq.worker.dev.local_redis import LocalRedis, free_port
from poolq.worker.observability.logs import JsonFormatter, redact_url


def test_rediss_url_means_tls_with_auth_and_retries():
    s = redis_settings("rediss://:pa55@cache.example:6380/2")
    assert (s.ssl, s.password, s.host, s.port, s.database) == (
        True,
        "pa55",
        "cache.example",
        6380,
        2,
    )
    assert s.retry is not None and s.retry_on_error  # rides out a restart
    assert redis_settings("redis://localhost:6379/0").ssl is False


def test_urls_and_reprs_hide_secrets():
    assert redact_url("redis://:pa55@h:1/0") == "redis://***@h:1/0"
    assert redact_url("redis://user:pa55@h/0") == "redis://***@h/0"
    assert redact_url("redis://h:1/0") == "redis://h:1/0"
    w = QdrantWriter(url="https://user:pw@q.example:6333", api_key="k3y-s3cret")
    assert "k3y-s3cret" not in repr(w) and "pw" not in repr(w)
    assert "grpcs://q.example:6334" in repr(w)  # gRPC on the host of the https:// URL
    assert "k3y" not in repr(Settings(qdrant_api_key="k3y-s3cret"))


def test_json_log_lines_carry_job_fields():
    rec = logging.LogRecord("poolq.jobs", logging.INFO, "f", 1, "job %s done", ("j1",), None)
    rec.job_id = "j1"
    rec.function = "ingest"
    out = json.loads(JsonFormatter().format(rec))
    assert out["msg"] == "job j1 done" and out["job_id"] == "j1" and out["function"] == "ingest"
    assert out["level"] == "info" and out["logger"] == "poolq.jobs"


# --- credentials never leave in a message, a log line or a repr -------------------

PASSWORD = "s3cret-pw"


def test_settings_and_client_reprs_redact_urls():
    s = Settings(
        redis_url=f"redis://:{PASSWORD}@cache.example:6380/0",
        qdrant_url=f"https://user:{PASSWORD}@q.example:6333",
    )
    assert PASSWORD not in repr(s) and PASSWORD not in str(s)
    assert "redis://***@cache.example:6380/0" in repr(s)
    assert "https://***@q.example:6333" in repr(s)
    assert s.redis_url.endswith(f"{PASSWORD}@cache.example:6380/0")  # the value itself is kept
    c = PoolqClient(f"redis://:{PASSWORD}@cache.example:6380/0")
    assert PASSWORD not in repr(c) and "redis://***@cache.example:6380/0" in repr(c)


def test_redacting_log_filter_hides_credentials():
    from poolq.wire.connection import RedactingFilter

    rec = logging.LogRecord(
        "x", logging.WARNING, "f", 1, "cannot reach %s", (f"redis://:{PASSWORD}@h:1/0",), None
    )
    assert RedactingFilter().filter(rec)
    assert rec.getMessage() == "cannot reach redis://***@h:1/0"


async def test_search_timeout_message_redacts_the_url(tmp_path):
    with LocalRedis(tmp_path / "redis", password=PASSWORD) as server:
        async with PoolqClient(server.url) as client:
            # no worker alive: refused at once, naming host and port, never the password
            with pytest.raises(TimeoutError) as none:
                await client.search("hello", "docs", timeout_s=0.2)
            # a worker that is alive (its heartbeat record) but never answers: the timeout
            heartbeat = {"worker_id": "w1", "seen_at": time.time()}
            key = constants.HEARTBEAT_KEY.format(worker_id="w1")
            await client.redis.set(key, serialize(heartbeat), ex=30)
            await client.redis.zadd(constants.WORKER_LAST_SEEN_KEY, {"w1": time.time()})
            with pytest.raises(TimeoutError) as timeout:
                await client.search("hello", "docs", timeout_s=0.5)
    assert PASSWORD not in str(none.value) and f"127.0.0.1:{server.port}" in str(none.value)
    message = str(timeout.value)
    assert PASSWORD not in message
    assert f"redis://***@127.0.0.1:{server.port}/0" in message


def _closed_port() -> int:
    port = free_port()  # bound then released: nothing listens there
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    return port


def _poolq(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "poolq.worker", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={k: v for k, v in os.environ.items() if not k.startswith("POOLQ_")},
    )


CLIENT_COMMANDS = {
    "enqueue": ["enqueue", "{docs}", "--collection", "c"],
    "enqueue --wait": ["enqueue", "{docs}", "--collection", "c", "--wait"],
    "status": ["status"],
    "status JOB": ["status", "some-job"],
    "search": ["search", "hello", "--collection", "c", "--timeout", "1"],
    "dlq list": ["dlq", "list"],
    "dlq retry": ["dlq", "retry", "--all"],
    "reindex": ["reindex", "--source", "{docs}", "--collection", "c"],
}


@pytest.mark.parametrize("command", list(CLIENT_COMMANDS))
def test_client_commands_fail_fast_with_one_redacted_line(command, tmp_path):
    """Against a Redis that is down every client command fails within seconds, with one line
    that names host and port and never the password, and a non-zero exit: refused on the
    system's answer when it connects (no connect deadline waited out, no outage ridden out)."""
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "a", "text": "hello"}) + "\n")
    port = _closed_port()
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    args = [a.format(docs=docs) for a in CLIENT_COMMANDS[command]]
    r = _poolq(*args, "--redis-url", url, cwd=tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert PASSWORD not in out
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert f"Redis is not reachable at 127.0.0.1:{port} (" in lines[0], lines[0]
    assert ": Error 111 " in lines[0], lines[0]
    assert "Traceback" not in out


def test_worker_startup_errors_redact_the_url(tmp_path):
    r = _poolq("worker", "--redis-url", f"http://:{PASSWORD}@127.0.0.1:1/0", cwd=tmp_path)
    assert r.returncode == 2
    assert PASSWORD not in r.stdout + r.stderr
    assert "expected a redis://" in r.stderr and "http://***@127.0.0.1:1/0" in r.stderr
    cfg = tmp_path / "poolq.toml"
    cfg.write_text(f'[worker]\nredis_url = "redis://:{PASSWORD}@127.0.0.1:1/0"\nmax_jobs = 0\n')
    r = _poolq("worker", "--config", str(cfg), cwd=tmp_path)
    assert (
        r.returncode == 2
        and "config [worker] max_jobs: expected an integer >= 1, got 0" in r.stderr
    )
    assert PASSWORD not in r.stdout + r.stderr


@pytest.mark.slow
def test_a_worker_waiting_for_redis_prints_no_password(tmp_path):
    """The worker rides out a Redis that is down (long retries, unchanged); whatever it prints
    meanwhile names no password. (It is stopped after a few seconds.)"""
    port = _closed_port()
    cfg = tmp_path / "poolq.toml"
    cfg.write_text(f'[worker]\nredis_url = "redis://:{PASSWORD}@127.0.0.1:{port}/0"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "poolq.worker", "worker", "--config", str(cfg), "--device", "cpu"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("POOLQ_")},
    )
    try:
        out, _ = proc.communicate(timeout=8)
    except subprocess.TimeoutExpired:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert PASSWORD not in out
