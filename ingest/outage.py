"""Riding out a Redis outage on the client side (part of :mod:`poolq.ingest.client`).

A client that has connected keeps waiting (:meth:`PoolqClient.wait`, ``poolq enqueue --wait``)
or asking (:meth:`PoolqClient.status`, ``poolq status``) through a Redis that goes away and
comes back, as the worker does: the reads are tried again on the worker's reconnect backoff
(:func:`~poolq.wire.connection.reconnect_backoff`: 0.1 s doubling up to 2 s) until Redis
answers, and the client gives up only once Redis has been unreachable for
``redis_outage_limit_s`` (argument of :class:`PoolqClient`, else env
``POOLQ_REDIS_OUTAGE_LIMIT_S``, else 300 s: :data:`REDIS_OUTAGE_LIMIT_S`): then
:class:`~poolq.wire.connection.RedisUnavailableError`, one line naming host, port, how
long and the setting. Nothing is lost meanwhile when Redis persists its data (append-only file):
the jobs are in Redis, and the workers ride the outage out too. Connecting in the first place
still fails within seconds (:meth:`PoolqClient.connect`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from redis.exceptions import AuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from poolq.wire.connection import RedisUnavailableError, reconnect_backoff, redact_text
from poolq.worker.config.loader import load_values
from poolq.worker.config.variables import default

# how long a client waits for Redis to come back, by default (the setting's declared default)
REDIS_OUTAGE_LIMIT_S: float = default("redis_outage_limit_s")
# what a Redis that is restarting raises: refused or reset connections, timeouts, and
# BusyLoadingError (a ConnectionError) while it loads its append-only file
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError, OSError)

log = logging.getLogger("poolq.client")
T = TypeVar("T")


def outage_limit_s(value: float | None = None) -> float:
    """The client's ``redis_outage_limit_s`` (``worker/config/client_settings.py``): ``value``,
    else ``POOLQ_REDIS_OUTAGE_LIMIT_S`` (or the config file's), else 300 s; ``ValueError``
    naming where a value that is not a number >= 0 came from."""
    name = "redis_outage_limit_s"
    chosen = load_values((name,), None, {name: value}, flag_names={name: name})
    return float(chosen.get(name, REDIS_OUTAGE_LIMIT_S))


class RedisOutage:
    """Since when Redis at ``where`` has been unreachable for one client, and when to try
    again: :meth:`failed` after each failed read, :meth:`succeeded` after one that got
    through."""

    def __init__(
        self, where: str, limit_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.where = where
        self.limit_s = limit_s
        self._clock = clock
        self._backoff = reconnect_backoff()
        self.since: float | None = None
        self.attempts = 0

    @property
    def down_s(self) -> float | None:
        """Seconds Redis has been unreachable (None: it is not)."""
        return None if self.since is None else self._clock() - self.since

    def failed(self, error: BaseException) -> float:
        """The seconds to wait before trying again; :class:`RedisUnavailableError` once Redis
        has been unreachable for ``limit_s``."""
        now = self._clock()
        if self.since is None:
            self.since = now
            log.info("Redis at %s is not reachable: waiting for it", self.where)
        self.attempts += 1
        down = now - self.since
        if down >= self.limit_s:
            reason = redact_text(str(error) or type(error).__name__)
            raise RedisUnavailableError(
                f"Redis at {self.where} has not been reachable for {down:.1f}s "
                f"(redis_outage_limit_s {self.limit_s:g}): {' '.join(reason.split())}"
            )
        return max(0.0, min(self._backoff.compute(self.attempts), self.limit_s - down))

    def succeeded(self) -> float | None:
        """How long the outage that just ended lasted (None: there was none)."""
        down = self.down_s
        if down is not None:
            log.info(
                "Redis at %s is back after %.1fs (%d attempts)", self.where, down, self.attempts
            )
        self.since, self.attempts = None, 0
        return down


async def ride_out(
    read: Callable[[], Awaitable[T]],
    outage: RedisOutage,
    on_outage: Callable[[float | None], None] | None = None,
) -> T:
    """``await read()``, tried again through a Redis outage (see :class:`RedisOutage`).
    ``on_outage(seconds_down)`` is called after each failed try, and ``on_outage(None)`` once
    Redis is back."""
    while True:
        try:
            result = await read()
        except OUTAGE_ERRORS as e:
            if isinstance(e, RedisUnavailableError | AuthenticationError):
                raise  # given up (a nested ride_out), or a Redis that refuses the login
            delay = outage.failed(e)
            if on_outage is not None:
                on_outage(outage.down_s)
            await asyncio.sleep(delay)
            continue
        if outage.succeeded() is not None and on_outage is not None:
            on_outage(None)
        return result
