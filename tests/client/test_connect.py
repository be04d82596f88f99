"""A client fails fast, in one line, when Redis is down; the worker keeps its long retries."""

from __future__ import annotations

import socket
import time

import pytest

from poolq.ingest.client import PoolqClient, SyncPoolqClient
from poolq.wire.connection import RedisUnavailableError, redis_settings
from poolq.worker.dev.local_redis import LocalRedis, free_port

PASSWORD = "s3cret-pw"


def test_client_settings_fail_fast_and_worker_settings_ride_out_restarts():
    url = f"redis://:{PASSWORD}@127.0.0.1:6379/0"
    worker, client = redis_settings(url), redis_settings(url, client=True)
    assert worker.conn_retries == 30 and worker.retry is not None and worker.retry._retries == 40
    assert client.conn_retries == 0 and client.retry is not None and client.retry._retries <= 1
    assert client.conn_timeout <= 2
    with pytest.raises(ValueError, match="must start with redis://") as info:
        redis_settings(f"http://:{PASSWORD}@h:1/0", client=True)
    assert PASSWORD not in str(info.value)


async def test_closed_port_fails_at_once_naming_host_and_port():
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(RedisUnavailableError) as info:
        await PoolqClient(f"redis://:{PASSWORD}@127.0.0.1:{port}/0").connect()
    assert time.monotonic() - t0 < 5
    message = str(info.value)
    assert PASSWORD not in message and "\n" not in message
    assert message.startswith(f"Redis is not reachable at 127.0.0.1:{port} ")
    assert isinstance(info.value, ConnectionError)  # callers' `except ConnectionError` holds


def test_the_sync_client_fails_the_same_way():
    port = free_port()
    with pytest.raises(RedisUnavailableError, match=f"127.0.0.1:{port}") as info:
        SyncPoolqClient(f"redis://:{PASSWORD}@127.0.0.1:{port}/0")
    assert PASSWORD not in str(info.value)


async def test_a_server_that_never_answers_is_given_up_on_within_the_deadline():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts connections, never replies to PING
        port = silent.getsockname()[1]
        t0 = time.monotonic()
        client = PoolqClient(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", connect_timeout_s=1.0)
        with pytest.raises(RedisUnavailableError, match=f"127.0.0.1:{port}.*no answer within 1s"):
            await client.connect()
        assert time.monotonic() - t0 < 3


async def test_a_wrong_password_is_named_and_not_shown(tmp_path):
    with LocalRedis(tmp_path / "redis", password=PASSWORD) as server:
        wrong = server.url.replace(PASSWORD, "not-the-password")
        with pytest.raises(RedisUnavailableError, match="refused the login") as info:
            await PoolqClient(wrong).connect()
        assert "not-the-password" not in str(info.value)
        async with PoolqClient(server.url) as client:  # the right one works
            assert await client.redis.ping()
