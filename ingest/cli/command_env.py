"""What the client's commands share: where the Redis URL comes from, and how a command fails
(one line on stderr, URLs redacted; the caller returns a non-zero exit status)."""

from __future__ import annotations

import sys
from pathlib import Path

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from poolq.wire.connection import RedisUnavailableError, describe_address, redact_text
from poolq.worker.config.client_settings import load_client_settings

# What a client command reports as one line (and exit code) instead of a traceback: Redis down
# or gone mid-command (RedisUnavailableError is a ConnectionError), a timeout, a bad URL.
CLIENT_ERRORS: tuple[type[BaseException], ...] = (ConnectionError, OSError, RedisError, ValueError)


class OutageNotice:
    """``on_outage`` for a client command: one line on stderr when Redis went away (it is waited
    for), one when it is back."""

    def __init__(self, command: str, redis_url: str, limit_s: float) -> None:
        self.command, self.where, self.limit_s = command, describe_address(redis_url), limit_s
        self.down = False

    def __call__(self, down_s: float | None) -> None:
        if down_s is not None and not self.down:
            self.down = True
            print(
                f"poolq {self.command}: Redis at {self.where} is not reachable: waiting for it to "
                f"come back (giving up after {self.limit_s:g}s: redis_outage_limit_s)",
                file=sys.stderr,
                flush=True,
            )
        elif down_s is None and self.down:
            self.down = False
            print(f"poolq {self.command}: Redis at {self.where} is back", file=sys.stderr)


def resolve_redis_url(flag: str | None, config: Path | str | None = None) -> str:
    """The client's ``redis_url`` (``worker/config/client_settings.py``): the config file's
    ``[worker] redis_url`` (``--config`` / ``POOLQ_CONFIG``), then ``POOLQ_REDIS_URL``, then
    ``--redis-url``. A URL poolq cannot connect with is a ``ValueError`` naming where it came
    from, before anything connects."""
    return load_client_settings(config, {"redis_url": flag}).redis_url


def describe(exc: BaseException) -> str:
    """An exception as the one line a command prints."""
    if isinstance(exc, RedisUnavailableError):
        return str(exc)
    if isinstance(exc, RedisConnectionError | RedisTimeoutError):
        return f"Redis is not reachable: {exc}"  # went away mid-command (host:port in exc)
    return str(exc) or type(exc).__name__


def error(command: str, message: object) -> None:
    """``poolq COMMAND: error: MESSAGE`` on stderr, on one line, credentials in any URL hidden
    (``message``: text or an exception)."""
    text = describe(message) if isinstance(message, BaseException) else str(message)
    print(f"poolq {command}: error: {' '.join(redact_text(text).split())}", file=sys.stderr)
