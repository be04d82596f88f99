"""Commands packed by hiredis on the worker's asyncio Redis connections.

redis-py's asyncio connection packs every command in Python (``Connection.pack_command``: about
4.3 us of CPU a command on this project's 2-core VM), while its synchronous client packs them
with hiredis (``HiredisRespSerializer``: 0.7 us) whenever hiredis is installed. A worker sends
about 40 commands a job (arq's and its own) and polls its queue 20 times a second:
:func:`pack_with_hiredis` gives a client's connections the synchronous client's packer. The
bytes are the same, and so are the errors (``DataError``) for values Redis cannot take
(``tests/wire/test_redis_packing.py``). A connection whose encoding is not UTF-8 with strict
errors keeps Python's packer, as does every connection where hiredis is not installed.
"""

from __future__ import annotations

from typing import Any

from redis.asyncio.connection import Connection
from redis.connection import HiredisRespSerializer
from redis.utils import HIREDIS_AVAILABLE

_HIREDIS = HiredisRespSerializer() if HIREDIS_AVAILABLE else None


class HiredisPackedConnection(Connection):
    """A plain TCP connection (no state of its own) whose commands hiredis packs."""

    def pack_command(self, *args: Any) -> list[bytes]:
        enc = self.encoder
        if _HIREDIS is None or enc.encoding.lower() not in ("utf-8", "utf8"):
            return super().pack_command(*args)
        if enc.encoding_errors != "strict":
            return super().pack_command(*args)
        return _HIREDIS.pack(*args)


def pack_with_hiredis(redis: Any) -> bool:
    """Make ``redis`` (a ``redis.asyncio.Redis``, arq's pool) pack with hiredis: its pool
    opens :class:`HiredisPackedConnection`s, and the plain connections it holds become ones
    (the subclass adds no state). False, and nothing changed, for a pool of another kind of
    connection (TLS, a Unix socket) or without hiredis."""
    pool = getattr(redis, "connection_pool", None)
    if _HIREDIS is None or pool is None or pool.connection_class is not Connection:
        return False
    pool.connection_class = HiredisPackedConnection
    held = [*getattr(pool, "_available_connections", ()), *getattr(pool, "_in_use_connections", ())]
    for conn in held:
        if type(conn) is Connection:
            conn.__class__ = HiredisPackedConnection
    return True
