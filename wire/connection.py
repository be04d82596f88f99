"""Connecting to Redis, shared by the client and the worker: connection settings from a URL,
checked (:func:`check_redis_url`), the same URL with its credentials hidden (for every message,
log line and repr), and for the worker commands that retry through a Redis restart, logging
each reconnect attempt with the time Redis has been down so far (:class:`WorkerRetry`)."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from arq.connections import RedisSettings
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

# A client (application code, `poolq enqueue|status|search|dlq|reindex`) fails fast: one
# connect attempt of at most CLIENT_CONNECT_TIMEOUT_S, retried once, and the whole connect is
# bounded by CLIENT_CONNECT_DEADLINE_S (see PoolqClient.connect).
CLIENT_CONNECT_TIMEOUT_S = 2.0
CLIENT_CONNECT_DEADLINE_S = 8.0
REDIS_SCHEMES = ("redis", "rediss", "unix")

log = logging.getLogger("poolq.redis")
T = TypeVar("T")


def check_redis_url(url: str) -> str:
    """``url`` if it is a Redis URL poolq can connect with, else :class:`ValueError` with one
    line naming it (credentials hidden): the scheme, a numeric port, a numeric database."""
    shown = repr(redact_url(url)) if isinstance(url, str) else repr(type(url).__name__)
    if not isinstance(url, str) or urlsplit(url).scheme.lower() not in REDIS_SCHEMES:
        raise ValueError(f"expected a redis://, rediss:// or unix:// URL, got {shown}")
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - parsing it is the check
    except ValueError:
        raise ValueError(f"expected a numeric port in the Redis URL {shown}") from None
    if parts.scheme.lower() == "unix":
        if not parts.path:
            raise ValueError(f"expected a socket path in the Redis URL {shown}")
        return url
    db = parts.path.lstrip("/")
    if db and not db.isdigit():
        raise ValueError(f"expected a database number after the host in {shown}, got {db!r}")
    return url


def probe_redis(url: str, timeout_s: float = CLIENT_CONNECT_DEADLINE_S) -> None:
    """Connect to Redis at ``url`` and PING it, within ``timeout_s`` (a host that does not
    answer, or a name that takes long to resolve, included): :class:`RedisUnavailableError`
    naming host and port when it cannot. For a worker's start-up, before it loads models."""
    import redis as redis_sync
    from redis.exceptions import AuthenticationError, RedisError

    where = describe_address(check_redis_url(url))
    outcome: list[BaseException | None] = []

    def ping() -> None:
        client = redis_sync.Redis.from_url(
            url,
            socket_connect_timeout=CLIENT_CONNECT_TIMEOUT_S,
            socket_timeout=CLIENT_CONNECT_TIMEOUT_S,
            retry_on_timeout=False,
        )
        try:
            client.ping()
            outcome.append(None)
        except (RedisError, OSError) as e:
            outcome.append(e)
        finally:
            client.close()

    thread = threading.Thread(target=ping, name="poolq-redis-probe", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not outcome:
        raise RedisUnavailableError(
            f"Redis is not reachable at {where}: no answer within {timeout_s:g}s"
        )
    error = outcome[0]
    if isinstance(error, AuthenticationError):
        raise RedisUnavailableError(f"Redis at {where} refused the login: {error}")
    if error is not None:
        reason = redact_text(str(error) or type(error).__name__)
        raise RedisUnavailableError(f"Redis is not reachable at {where}: {reason}")


def redis_settings(url: str, *, client: bool = False) -> RedisSettings:
    """From a ``redis://``, ``rediss://`` (TLS) or ``unix://`` URL, password included.

    For the worker (the default) commands retry through a Redis restart (exponential backoff up
    to 2 s, about a minute in all, each attempt logged by :class:`WorkerRetry`) and arq retries
    the first connection 30 times; ``poolq worker`` refuses a Redis that is down at start-up
    before this is used (:func:`probe_redis`, within seconds).
    With ``client=True`` a Redis that is down is reported within seconds: a short connect
    timeout, one retry, no arq reconnect loop."""
    if not isinstance(url, str) or urlsplit(url).scheme.lower() not in REDIS_SCHEMES:
        raise ValueError(
            f"redis URL must start with redis://, rediss:// or unix://, got {redact_url(url)!r}"
        )
    check_redis_url(url)  # a bad port or database, named
    try:
        s = RedisSettings.from_dsn(url)
    except (RuntimeError, ValueError):  # arq: 'invalid DSN scheme'; a bad port or database
        raise ValueError(
            f"expected a redis://, rediss:// or unix:// URL, got {redact_url(url)!r}"
        ) from None
    s.retry_on_error = [RedisConnectionError, RedisTimeoutError, ConnectionRefusedError]
    if client:
        s.conn_timeout = CLIENT_CONNECT_TIMEOUT_S  # type: ignore[assignment]
        s.retry = Retry(ExponentialBackoff(cap=0.5, base=0.1), retries=1)
        s.conn_retries = 0
    else:
        s.retry = WorkerRetry(describe_address(url))
        s.conn_retries = 30
    return s


class _Outage:
    """Since when Redis at one address has been unreachable, process-wide (every connection of
    the worker's pool holds its own copy of the :class:`WorkerRetry`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.since: dict[str, float] = {}
        self.attempts: dict[str, int] = {}

    def failed(self, where: str, error: BaseException) -> None:
        now = time.monotonic()
        with self.lock:
            since = self.since.setdefault(where, now)
            attempt = self.attempts[where] = self.attempts.get(where, 0) + 1
        log.warning(
            "Redis at %s is not reachable (%s): reconnect attempt %d, down for %.1fs",
            where,
            redact_text(str(error) or type(error).__name__),
            attempt,
            now - since,
        )

    def succeeded(self, where: str) -> None:
        if where not in self.since:  # the common case: no lock, no log
            return
        with self.lock:
            since = self.since.pop(where, None)
            attempts = self.attempts.pop(where, 0)
        if since is not None:
            log.warning(
                "Redis at %s is back after %.1fs (%d reconnect attempts)",
                where,
                time.monotonic() - since,
                attempts,
            )


OUTAGES = _Outage()


def reconnect_backoff() -> ExponentialBackoff:
    """The delays between reconnect attempts, for the worker's commands (:class:`WorkerRetry`)
    and for clients riding out an outage (``poolq.ingest.outage``): 0.1 s doubling up to 2 s."""
    return ExponentialBackoff(cap=2.0, base=0.1)


class WorkerRetry(Retry):
    """The worker's retry of Redis commands (exponential backoff up to 2 s, ``retries`` times):
    each failed attempt is logged with the time Redis has been down so far, and the first
    command that gets through again logs how long the outage lasted."""

    def __init__(self, where: str, retries: int = 40) -> None:
        super().__init__(reconnect_backoff(), retries)
        self.where = where

    async def call_with_retry(
        self, do: Callable[[], Awaitable[T]], fail: Callable[[Any], Any]
    ) -> T:
        async def failed(error: Any) -> None:
            OUTAGES.failed(self.where, error)
            await fail(error)

        result = await super().call_with_retry(do, failed)
        OUTAGES.succeeded(self.where)
        return result


def describe_address(url: str) -> str:
    """Where ``url`` points, without credentials: ``host:port`` or the socket path."""
    try:
        parts = urlsplit(url)
        if parts.scheme == "unix":
            return parts.path or "?"
        return f"{parts.hostname or 'localhost'}:{parts.port or 6379}"
    except ValueError:
        return redact_url(url)


def redact_url(url: str) -> str:
    """``redis://:secret@host:6379/0`` -> ``redis://***@host:6379/0``."""
    try:
        parts = urlsplit(url)
        if parts.password is None and parts.username is None:
            return redact_text(url)
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
    except ValueError:  # a port that is not a number, say: hide what looks like credentials
        return redact_text(url)
    return redact_text(urlunsplit(parts._replace(netloc=f"***@{host}")))


# userinfo: up to the last "@" before the path (a password may hold an unescaped "@")
_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.\-]*://)[^\s/]*@", re.I)
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#\s'\"]*", re.I)


def redact_text(text: str) -> str:
    """Every URL in ``text`` with its credentials hidden (``scheme://***@host``, and a
    ``?password=`` query parameter)."""
    return _QUERY_PASSWORD.sub(r"\1***", _CREDENTIALS.sub(r"\1***@", text))


class RedactingFilter(logging.Filter):
    """A log filter (put it on handlers) that hides the credentials of every URL in a record's
    message and traceback text."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # bad arguments: left for the handler to report, as without us
            return True
        redacted = redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True


def redact_log_handlers(logger: logging.Logger | None = None) -> None:
    """Put a :class:`RedactingFilter` on every handler of ``logger`` (default: the root)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


class RedisUnavailableError(ConnectionError):
    """A client could not reach (or log in to) Redis: the message is one line naming host and
    port, the URL's credentials hidden."""
