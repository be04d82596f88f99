"""A client fails fast, in one line, when Redis is down; the worker keeps its long retries."""

from __future__ import annotations

import socket

import pytest

from poolq.ingest import client as client_module
from poolq.ingest.client import PoolqClient, SyncPoolqClient
from poolq.wire import connection
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
    with pytest.raises(RedisUnavailableError) as info:
        await PoolqClient(f"redis://:{PASSWORD}@127.0.0.1:{port}/0").connect()
    message = str(info.value)
    assert PASSWORD not in message and "\n" not in message
    assert message.startswith(f"Redis is not reachable at 127.0.0.1:{port} ")
    # the system's refusal, not the connect deadline (8 s) run out
    assert ": Error 111 " in message and "no answer within" not in message, message
    assert isinstance(info.value, ConnectionError)  # callers' `except ConnectionError` holds


def test_the_sync_client_fails_the_same_way():
    port = free_port()
    with pytest.raises(RedisUnavailableError, match=f"127.0.0.1:{port}") as info:
        SyncPoolqClient(f"redis://:{PASSWORD}@127.0.0.1:{port}/0")
    assert PASSWORD not in str(info.value)


@pytest.mark.timeout(60)  # (60 times the deadline given: only a deadline not applied runs out)
async def test_a_server_that_never_answers_is_given_up_on_within_the_deadline(monkeypatch):
    # every other limit on connecting an hour: the deadline given is the one thing that can end
    # this in time, so a connect that ends, naming it, was ended by it
    monkeypatch.setattr(connection, "CLIENT_CONNECT_TIMEOUT_S", 3600.0)
    monkeypatch.setattr(client_module, "CLIENT_CONNECT_DEADLINE_S", 3600.0)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # accepts connections, never replies to PING
        port = silent.getsockname()[1]
        client = PoolqClient(f"redis://:{PASSWORD}@127.0.0.1:{port}/0", connect_timeout_s=1.0)
        with pytest.raises(
            RedisUnavailableError, match=f"127.0.0.1:{port}.*: no answer within 1s$"
        ):
            await client.connect()
        silent.setblocking(False)
        silent.accept()[0].close()  # it had connected: the deadline ran out waiting on PING


async def test_a_wrong_password_is_named_and_not_shown(tmp_path):
    with LocalRedis(tmp_path / "redis", password=PASSWORD) as server:
        wrong = server.url.replace(PASSWORD, "not-the-password")
        with pytest.raises(RedisUnavailableError, match="refused the login") as info:
            await PoolqClient(wrong).connect()
        assert "not-the-password" not in str(info.value)
        async with PoolqClient(server.url) as client:  # the right one works
            assert await client.redis.ping()
