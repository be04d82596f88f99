"""Where a worker's Redis and Qdrant are, resolved without loading anything heavy.

``poolq worker`` checks these before it loads its models (or even imports torch, which the
profile of :mod:`~poolq.worker.config.settings` needs), with the settings' loader
(``loader.py``; an explicit ``--qdrant-path`` beats a URL from file or environment), for the
three settings that say where things are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from poolq.wire.connection import check_redis_url, redact_url
from poolq.worker.config.loader import load_values
from poolq.worker.config.variables import default

NAMES = ("redis_url", "qdrant_url", "qdrant_path")
QDRANT_SCHEMES = ("http", "https", "grpc", "grpcs")  # sinks/store/server_target.py


def check_qdrant_url(url: str) -> str:
    """``url`` if it is an ``http(s)://`` or ``grpc(s)://`` URL with a host (what a Qdrant
    server answers on), else :class:`ValueError` naming it (credentials hidden)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing it is the check
        ok = parts.scheme.lower() in QDRANT_SCHEMES and bool(parts.hostname)
    except (TypeError, ValueError, AttributeError):
        ok = False
    if not ok:
        raise ValueError(
            "qdrant_url: expected an http://, https://, grpc:// or grpcs:// URL of a Qdrant "
            f"server, got {redact_url(url) if isinstance(url, str) else url!r}"
        )
    return url


@dataclass(frozen=True)
class Locations:
    redis_url: str
    qdrant_url: str | None
    qdrant_path: str


def resolve_locations(
    config: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Locations:
    """The Redis URL, Qdrant URL and embedded folder the settings will hold, each checked
    (``ValueError`` naming where a bad one came from, or a config file that is missing or is
    not TOML)."""
    origins: dict[str, str] = {}
    values = load_values(NAMES, config, overrides, environ, origins=origins)
    if values.get("qdrant_url") and (overrides or {}).get("qdrant_path"):
        values.pop("qdrant_url")  # an explicit --qdrant-path beats a URL from file or env
    where = Locations(
        values.get("redis_url", default("redis_url")),
        values.get("qdrant_url"),
        values.get("qdrant_path", default("qdrant_path")),
    )
    for name, check in (("redis_url", check_redis_url), ("qdrant_url", check_qdrant_url)):
        value = getattr(where, name)
        try:
            if value is not None:
                check(value)
        except ValueError as e:
            message = str(e).removeprefix(f"{name}: ")
            raise ValueError(f"{origins.get(name, name)}: {message}") from None
    return where
