"""Connecting to Redis, shared by the client and the worker: connection settings from a URL,
and the same URL with its credentials hidden (for every message, log line and repr)."""

from __future__ import annotations

import logging
import re
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


def redis_settings(url: str, *, client: bool = False) -> RedisSettings:
    """From a ``redis://``, ``rediss://`` (TLS) or ``unix://`` URL, password included.

    For the worker (the default) commands retry through a Redis restart (exponential backoff up
    to 2 s, about a minute in all) and arq retries the first connection 30 times, so a worker
    rides out a restart instead of exiting. With ``client=True`` a Redis that is down is
    reported within seconds: a short connect timeout, one retry, no arq reconnect loop."""
    try:
        s = RedisSettings.from_dsn(url)
    except RuntimeError:  # arq: 'invalid DSN scheme'
        raise ValueError(
            f"redis URL must start with redis://, rediss:// or unix://, got {redact_url(url)!r}"
        ) from None
    s.retry_on_error = [RedisConnectionError, RedisTimeoutError, ConnectionRefusedError]
    if client:
        s.conn_timeout = CLIENT_CONNECT_TIMEOUT_S  # type: ignore[assignment]
        s.retry = Retry(ExponentialBackoff(cap=0.5, base=0.1), retries=1)
        s.conn_retries = 0
    else:
        s.retry = Retry(ExponentialBackoff(cap=2.0, base=0.1), retries=40)
        s.conn_retries = 30
    return s


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
