"""Redis URLs and connections of ``wire/connection.py``: URLs checked in one line, a Redis
that is down refused within seconds at start-up, and a running worker's commands riding out a
restart of a real redis-server while logging each reconnect attempt with the time waited."""

from __future__ import annotations

import asyncio
import logging
import re
import socket

import pytest
from arq.connections import create_pool

from poolq.wire.connection import (
    RedisUnavailableError,
    WorkerRetry,
    check_redis_url,
    probe_redis,
    redis_settings,
)
from poolq.worker.dev.local_redis import free_port


@pytest.mark.parametrize(
    "url",
    [
        "redis://localhost:6379/0",
        "redis://:pw@10.0.0.1:6380",
        "rediss://user:pw@redis.example:6380/2",
        "unix:///run/redis.sock",
        "REDIS://LOCALHOST",
    ],
)
def test_good_urls_are_returned(url):
    assert check_redis_url(url) == url


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "http://user:secret@localhost:6379",
            "expected a redis://, rediss:// or unix:// URL, got 'http://***@localhost:6379'",
        ),
        ("localhost:6379", "expected a redis://, rediss:// or unix:// URL, got 'localhost:6379'"),
        ("redis://:secret@host:port/0", "expected a numeric port in the Redis URL "),
        ("redis://host:6379/zero", "expected a database number after the host"),
        ("unix://", "expected a socket path"),
    ],
)
def test_bad_urls_are_one_line_without_credentials(url, message):
    with pytest.raises(ValueError) as e:
        check_redis_url(url)
    assert message in str(e.value)
    assert "secret" not in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ValueError) as e:
        redis_settings(url)  # what the worker and the client build their connections with
    assert "secret" not in str(e.value) and "\n" not in str(e.value)


def test_a_redis_that_is_down_is_refused_within_seconds():
    port = free_port()  # nothing listens there
    with pytest.raises(RedisUnavailableError) as e:
        probe_redis(f"redis://:secret@127.0.0.1:{port}/0")
    # refused on the system's answer, not by the probe's deadline running out
    assert str(e.value).startswith(f"Redis is not reachable at 127.0.0.1:{port}: Error 111 ")
    assert "Connection refused" in str(e.value) and "no answer within" not in str(e.value)
    assert "secret" not in str(e.value)
    with socket.socket() as silent:  # accepts connections, never answers PING
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        where = f"127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(RedisUnavailableError, match=rf"{where}: no answer within 0\.5s$"):
            probe_redis(f"redis://{where}/0", timeout_s=0.5)  # the deadline bounds the probe
    with pytest.raises(RedisUnavailableError, match=r"no-such-host\.invalid:6379"):
        probe_redis("redis://no-such-host.invalid:6379/0")


def test_a_redis_that_answers_passes_and_a_wrong_password_is_named(tmp_path):
    from poolq.worker.dev.local_redis import LocalRedis

    with LocalRedis(tmp_path / "r", password="right") as server:
        probe_redis(server.url)
        with pytest.raises(RedisUnavailableError, match="refused the login"):
            probe_redis(f"redis://:wrong@127.0.0.1:{server.port}/0")


def test_the_worker_retry_is_logged_per_attempt_and_rides_out_a_restart(redis_server, caplog):
    settings = redis_settings(redis_server.url)
    assert isinstance(settings.retry, WorkerRetry)

    async def go():
        pool = await create_pool(settings)
        try:
            assert await pool.ping()
            redis_server.stop()
            pending = asyncio.ensure_future(pool.set("k", "v"))
            await asyncio.sleep(3)
            assert not pending.done()  # still retrying
            redis_server.start()
            await asyncio.wait_for(pending, 30)
            assert await pool.get("k") in (b"v", None)  # AOF fsync'ed every second
        finally:
            await pool.aclose()

    with caplog.at_level(logging.WARNING, logger="poolq.redis"):
        asyncio.run(go())
    lines = [r.getMessage() for r in caplog.records if r.name == "poolq.redis"]
    attempts = [
        float(m.group(2))
        for line in lines
        if (m := re.search(r"reconnect attempt (\d+), down for ([\d.]+)s", line))
    ]
    assert len(attempts) >= 3, lines
    assert attempts == sorted(attempts) and attempts[-1] >= 1.0  # the time waited so far
    where = f"127.0.0.1:{redis_server.port}"
    assert all(where in line for line in lines)
    back = re.search(rf"Redis at {re.escape(where)} is back after ([\d.]+)s", lines[-1])
    assert back and float(back.group(1)) >= 3, lines
