"""hiredis packing on the worker's asyncio connections (``wire/redis_packing.py``): the same
bytes as redis-py's Python packer for any command (fuzzed), the same errors, and a pool that
packs with it end to end, its existing connections included."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.asyncio.connection import Connection, UnixDomainSocketConnection
from redis.exceptions import DataError

from poolq.wire.redis_packing import HiredisPackedConnection, pack_with_hiredis

args = st.one_of(
    st.text(max_size=20),
    st.binary(max_size=20),
    st.integers(-(2**80), 2**80),
    st.floats(allow_nan=False),
    st.binary(min_size=7000, max_size=9000),  # past redis-py's buffer cutoff
)
names = st.sampled_from(["SET", "HSET", "ZADD", "EVALSHA", "CONFIG GET", b"OBJECT ENCODING"])


@given(names, st.lists(args, max_size=8))
@settings(max_examples=300, deadline=None)
def test_the_bytes_are_redis_pys(name, rest):
    ours = HiredisPackedConnection().pack_command(name, *rest)
    theirs = Connection().pack_command(name, *rest)
    assert b"".join(ours) == b"".join(bytes(x) for x in theirs)


@pytest.mark.parametrize("bad", [True, None, [1], {"a": 1}])
def test_values_redis_cannot_take_fail_the_same_way(bad):
    for conn in (Connection(), HiredisPackedConnection()):
        with pytest.raises(DataError):
            conn.pack_command("SET", "k", bad)


def test_another_encoding_keeps_pythons_packer():
    conn = HiredisPackedConnection(encoding="latin-1")
    assert conn.pack_command("SET", "k", "é") == Connection(encoding="latin-1").pack_command(
        "SET", "k", "é"
    )


def test_only_plain_tcp_pools_are_changed():
    unix = aioredis.Redis(unix_socket_path="/nonexistent.sock")
    assert not pack_with_hiredis(unix)
    assert unix.connection_pool.connection_class is UnixDomainSocketConnection
    assert not pack_with_hiredis(object())


async def test_a_pool_packs_with_hiredis_end_to_end(redis_server):
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        assert await client.set("before", "x")  # a connection the pool holds already
        held = list(client.connection_pool._available_connections)
        assert held and all(type(c) is Connection for c in held)
        assert pack_with_hiredis(client)
        assert all(type(c) is HiredisPackedConnection for c in held)
        assert client.connection_pool.connection_class is HiredisPackedConnection
        async with client.pipeline(transaction=True) as pipe:
            pipe.hset("h", mapping={"a": 1, "b": "ü", "c": 2.5})
            pipe.expire("h", 60)
            pipe.get("before")
            assert (await pipe.execute())[1:] == [True, b"x"]
        assert await client.hgetall("h") == {b"a": b"1", b"b": "ü".encode(), b"c": b"2.5"}
    finally:
        await client.aclose()
