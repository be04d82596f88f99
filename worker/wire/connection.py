"""Connecting to Redis, shared by the client and the worker: connection settings from a URL,
and the same URL with its credentials hidden (for every message, log line and repr)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from arq.connections import RedisSettings
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError


def redis_settings(url: str) -> RedisSettings:
    """From a ``redis://``, ``rediss://`` (TLS) or ``unix://`` URL, password included. Commands
    retry through a Redis restart (exponential backoff up to 2 s, about a minute in all), so a
    worker rides out a restart instead of exiting."""
    s = RedisSettings.from_dsn(url)
    s.retry_on_error = [RedisConnectionError, RedisTimeoutError, ConnectionRefusedError]
    s.retry = Retry(ExponentialBackoff(cap=2.0, base=0.1), retries=40)
    s.conn_retries = 30
    return s


def redact_url(url: str) -> str:
    """``redis://:secret@host:6379/0`` -> ``redis://***@host:6379/0``."""
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=f"***@{host}"))


_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.\-]*://)[^\s/@]*@", re.I)


def redact_text(text: str) -> str:
    """Every URL in ``text`` with its credentials hidden (``scheme://***@host``)."""
    return _CREDENTIALS.sub(r"\1***@", text)
