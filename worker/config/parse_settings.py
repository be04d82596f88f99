"""The parse stage's settings (``poolq worker --role parse``, and the parse process of ``--role
all``): :class:`ParseSettings`, loaded by :func:`load_parse_settings` with the encode stage's
loader and precedence (config file ``[worker]`` table, then ``POOLQ_*`` variables, then flags).
Apart from :class:`~poolq.worker.config.settings.Settings` because those carry the collection
profile, and with it torch: a parse worker never imports it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from poolq.wire.connection import check_redis_url
from poolq.worker.config.loader import check_fields, load_role
from poolq.worker.config.variables import default
from poolq.worker.parse.ocr_engine import missing as ocr_missing


@dataclass(frozen=True)
class ParseSettings:
    """Each field a setting declared in :mod:`~poolq.worker.config.variables`."""

    redis_url: str = default("redis_url")
    parse_workers: int | None = default("parse_workers")  # None: half the CPUs, 1 to 4
    parse_timeout_s: float = default("parse_timeout_s")
    parse_memory_mb: int = default("parse_memory_mb")
    ocr: str = default("ocr")
    parse_max_jobs: int = default("parse_max_jobs")
    parse_child: str | None = default("parse_child")
    max_file_bytes: int = default("max_file_bytes")
    max_job_bytes: int = default("max_job_bytes")
    max_tries: int = default("max_tries")
    keep_result_s: int = default("keep_result_s")
    job_timeout_s: int = default("job_timeout_s")
    shutdown_grace_s: int = default("shutdown_grace_s")
    source_roots: str | None = default("source_roots")
    source_uris: str | None = default("source_uris")
    http_timeout_s: float = default("http_timeout_s")
    source_retry_s: float = default("source_retry_s")

    def __post_init__(self) -> None:
        check_fields(self)
        if self.ocr == "always" and (why := ocr_missing()) is not None:
            raise ValueError(f"ocr: always, but {why}")
        try:
            check_redis_url(self.redis_url)
        except ValueError as e:
            raise ValueError(f"redis_url: {e}") from None


def load_parse_settings(
    config: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> ParseSettings:
    """``config`` (else ``POOLQ_CONFIG``), then the environment, then ``overrides`` (flags)."""
    return load_role(ParseSettings, config, overrides, environ)
