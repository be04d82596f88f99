"""An in-memory stand-in for the few ``redis.asyncio.Redis`` calls the job guard and the reaper
make (strings with a millisecond expiry, sets, hashes, sorted-set scores), so that their Redis
wrappers can be checked without a server. Semantics follow Redis for what is used; expiry does
not advance on its own (``pttl`` returns what was set)."""

from __future__ import annotations

import fnmatch
from collections.abc import AsyncIterator
from typing import Any


def _b(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


class FakeRedis:
    def __init__(self) -> None:
        self.strings: dict[str, bytes] = {}
        self.ttl_ms: dict[str, int] = {}
        self.sets: dict[str, set[bytes]] = {}
        self.hashes: dict[str, dict[str, bytes]] = {}
        self.zsets: dict[str, dict[str, float]] = {}
        self.calls: list[str] = []

    def _keys(self) -> set[str]:
        return set(self.strings) | set(self.sets) | set(self.hashes) | set(self.zsets)

    # strings
    async def set(self, key: str, value: Any) -> None:
        self.strings[key] = _b(value)
        self.ttl_ms.pop(key, None)

    async def psetex(self, key: str, ttl_ms: int, value: Any) -> None:
        self.strings[key] = _b(value)
        self.ttl_ms[key] = ttl_ms

    async def get(self, key: str) -> bytes | None:
        return self.strings.get(key)

    async def pttl(self, key: str) -> int:
        if key not in self._keys():
            return -2
        return self.ttl_ms.get(key, -1)

    # any key
    async def exists(self, *keys: str) -> int:
        return sum(k in self._keys() for k in keys)

    async def delete(self, *keys: str) -> int:
        n = 0
        for k in keys:
            found = False
            for store in (self.strings, self.sets, self.hashes, self.zsets):
                found = store.pop(k, None) is not None or found
            self.ttl_ms.pop(k, None)
            n += found
        return n

    async def scan_iter(self, match: str = "*") -> AsyncIterator[bytes]:
        for k in sorted(self._keys()):
            if fnmatch.fnmatchcase(k, match):
                yield k.encode()

    # sets
    async def sadd(self, key: str, *members: Any) -> int:
        s = self.sets.setdefault(key, set())
        before = len(s)
        s |= {_b(m) for m in members}
        return len(s) - before

    async def srem(self, key: str, *members: Any) -> int:
        s = self.sets.get(key, set())
        before = len(s)
        s -= {_b(m) for m in members}
        if not s:
            self.sets.pop(key, None)
        return before - len(s)

    async def smembers(self, key: str) -> set[bytes]:
        return set(self.sets.get(key, set()))

    # hashes
    async def hset(self, key: str, field: str, value: bytes) -> int:
        h = self.hashes.setdefault(key, {})
        new = field not in h
        h[field] = value
        return int(new)

    # sorted sets
    async def zadd(self, key: str, mapping: dict[str, float]) -> None:
        self.zsets.setdefault(key, {}).update(mapping)

    async def zscore(self, key: str, member: str) -> float | None:
        return self.zsets.get(key, {}).get(member)


class BrokenRedis:
    """The calls the job guard makes, failing as if Redis were down."""

    def __init__(self) -> None:
        self.calls = 0

    async def sadd(self, *args: Any) -> int:
        from redis.exceptions import ConnectionError as RedisConnectionError

        self.calls += 1
        raise RedisConnectionError("redis is down")

    srem = hset = sadd
