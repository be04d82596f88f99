"""Where a worker's Redis and Qdrant are, resolved without loading anything heavy.

``poolq worker`` checks these before it loads its models (or even imports torch, which the
profile of :mod:`~poolq.worker.config.settings` needs): the same precedence as
:func:`~poolq.worker.config.settings.load_settings` (config file ``[worker]`` table, then
``POOLQ_*`` variables, then flags; an explicit ``--qdrant-path`` beats a URL from file or
environment), for the three settings that say where things are.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from poolq.wire import constants
from poolq.wire.connection import redact_url

ENV_PREFIX = "POOLQ_"
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
    """The Redis URL, Qdrant URL and embedded folder the settings will hold (``ValueError`` for
    a config file that is missing or is not TOML, naming it)."""
    env = os.environ if environ is None else environ
    config = config or env.get(ENV_PREFIX + "CONFIG")
    values: dict[str, Any] = {}
    if config:
        path = Path(config)
        if not path.is_file():
            raise ValueError(f"config file {str(path)!r} does not exist")
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"config file {str(path)!r}: {e}") from None
        worker = data.get("worker") or {}
        if isinstance(worker, dict):
            values.update({k: worker[k] for k in NAMES if worker.get(k) not in (None, "")})
    for name in NAMES:
        if v := env.get(ENV_PREFIX + name.upper()):
            values[name] = v
    flags = {k: v for k, v in (overrides or {}).items() if k in NAMES and v not in (None, "")}
    values.update(flags)
    if values.get("qdrant_url") and "qdrant_path" in flags:
        values.pop("qdrant_url")  # an explicit --qdrant-path beats a URL from file or env
    return Locations(
        str(values.get("redis_url", constants.DEFAULT_REDIS_URL)),
        str(values["qdrant_url"]) if values.get("qdrant_url") else None,
        str(values.get("qdrant_path", constants.DEFAULT_QDRANT_PATH)),
    )
