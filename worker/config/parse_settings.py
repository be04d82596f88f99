"""Settings of the parse role (``poolq worker --role parse``, and the parse process of
``--role all``): flags, else ``POOLQ_*`` variables, else these defaults. Apart from
:class:`~poolq.worker.config.settings.Settings` because loading those loads the collection
profiles, and with them torch: a parse worker never imports it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from poolq.wire import constants
from poolq.wire.connection import check_redis_url
from poolq.worker.parse.limits import DEFAULT_PARSE_MEMORY_MB, DEFAULT_PARSE_TIMEOUT_S
from poolq.worker.parse.sandbox import DEFAULT_PARSE_WORKERS

ENV_PREFIX = "POOLQ_"


@dataclass(frozen=True)
class ParseSettings:
    redis_url: str = constants.DEFAULT_REDIS_URL
    # child processes parsing at once (each one file at a time), and the bounds of one file
    parse_workers: int = DEFAULT_PARSE_WORKERS
    parse_timeout_s: float = DEFAULT_PARSE_TIMEOUT_S
    parse_memory_mb: int = DEFAULT_PARSE_MEMORY_MB
    max_file_bytes: int = constants.MAX_FILE_BYTES
    # parse jobs running at once (each waits for a free child per file)
    max_jobs: int = 8
    max_tries: int = 5
    keep_result_s: int = 24 * 3600
    job_timeout_s: int = 3600
    shutdown_grace_s: int = 30
    # folders a file given by its path (or a file:// URI) may be read from (os.pathsep-separated;
    # None: none, and such a file is refused)
    source_roots: str | None = None
    # URI prefixes documents may be fetched from (spaces or commas; None: none, and such a
    # document is refused)
    source_uris: str | None = None
    http_timeout_s: float = 30.0  # each read of a web fetch, and the whole of one try
    source_retry_s: float = 120.0  # a failing object store or web server is retried this long

    def __post_init__(self) -> None:
        for name in ("parse_workers", "parse_memory_mb", "max_file_bytes", "max_jobs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.parse_timeout_s > 0:
            raise ValueError(f"parse_timeout_s must be > 0, got {self.parse_timeout_s}")
        try:
            check_redis_url(self.redis_url)
        except ValueError as e:
            raise ValueError(f"redis_url: {e}") from None


def load_parse_settings(
    overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> ParseSettings:
    """``overrides`` (flags; None values ignored) over ``POOLQ_<NAME>`` variables over defaults."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for f in fields(ParseSettings):
        raw = env.get(ENV_PREFIX + f.name.upper())
        if raw is None or raw == "":
            continue
        kind = type(getattr(ParseSettings, f.name, None))
        try:
            values[f.name] = float(raw) if kind is float else int(raw) if kind is int else raw
        except ValueError:
            raise ValueError(
                f"{ENV_PREFIX}{f.name.upper()}: expected a number, got {raw!r}"
            ) from None
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return ParseSettings(**values)
