"""What the client's commands share: where the Redis URL comes from, and how a command fails
(one line on stderr, URLs redacted; the caller returns a non-zero exit status)."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from poolq.wire import constants
from poolq.wire.connection import (
    RedisUnavailableError,
    check_redis_url,
    describe_address,
    redact_text,
)

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
    """``--redis-url``, else ``POOLQ_REDIS_URL``, else the config file's ``[worker] redis_url``
    (``--config`` / ``POOLQ_CONFIG``), else the default. Reads the file's ``[worker]`` table
    only: client commands never load the models' profile. A URL poolq cannot connect with is a
    ``ValueError`` naming where it came from, before anything connects."""
    url, origin = _redis_url(flag, config)
    try:
        return check_redis_url(url)
    except ValueError as e:
        raise ValueError(f"{origin}: {e}") from None


def _redis_url(flag: str | None, config: Path | str | None) -> tuple[str, str]:
    if flag:
        return flag, "--redis-url"
    if env := os.environ.get("POOLQ_REDIS_URL"):
        return env, "POOLQ_REDIS_URL"
    config = config or os.environ.get("POOLQ_CONFIG")
    if config:
        path = Path(config)
        if not path.is_file():
            raise ValueError(f"config file {str(path)!r} does not exist")
        worker = tomllib.loads(path.read_text(encoding="utf-8")).get("worker") or {}
        if worker.get("redis_url"):
            return str(worker["redis_url"]), f"{path} [worker] redis_url"
    return constants.DEFAULT_REDIS_URL, "the default Redis URL"


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
