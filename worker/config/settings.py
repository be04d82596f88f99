"""The encode stage's settings (``poolq worker --role all|encode``, ``search --direct``):
:class:`Settings`, loaded by :func:`load_settings` from the config file's ``[worker]`` table, then
the ``POOLQ_*`` variables, then the flags (``worker/config/loader.py``; every setting is declared
in ``worker/config/variables.py``). The rest of the config file is the collection profile
(``[vectors]``, ``[models]``, ``[chunking]``, ``[collection]``) and the ``[[reindex]]`` schedules.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from poolq.sinks.store.server_target import server_target
from poolq.wire.connection import check_redis_url, redact_text
from poolq.worker.config.event_loop import check_event_loop
from poolq.worker.config.loader import check_fields, config_file, load_values
from poolq.worker.config.locations import check_qdrant_url
from poolq.worker.config.profile import DEFAULT_PROFILE, Profile
from poolq.worker.config.schedule import ReindexSchedule
from poolq.worker.config.variables import VARIABLES, default


@dataclass(frozen=True)
class Settings:
    """The encode stage's settings (``poolq worker`` with ``--role all`` or ``encode``): each
    field a setting declared in :mod:`~poolq.worker.config.variables` (its help, unit and
    default are there), plus the collection profile and the ``[[reindex]]`` schedules."""

    redis_url: str = default("redis_url")
    qdrant_url: str | None = default("qdrant_url")
    qdrant_path: str = default("qdrant_path")
    qdrant_api_key: str | None = field(default=default("qdrant_api_key"), repr=False)
    qdrant_transport: str = default("qdrant_transport")
    qdrant_grpc_port: int | None = default("qdrant_grpc_port")
    qdrant_writes_in_flight: int = default("qdrant_writes_in_flight")
    store_process: bool = default("store_process")
    event_loop: str = default("event_loop")
    max_jobs: int = default("max_jobs")
    max_queued_tokens: int | None = default("max_queued_tokens")
    job_stall_timeout_s: int = default("job_stall_timeout_s")
    job_timeout_s: int = default("job_timeout_s")
    max_tries: int = default("max_tries")
    keep_result_s: int = default("keep_result_s")
    max_batch_tokens: int | None = default("max_batch_tokens")
    max_documents_per_job: int = default("max_documents_per_job")
    max_document_bytes: int = default("max_document_bytes")
    max_job_bytes: int = default("max_job_bytes")
    shutdown_grace_s: int = default("shutdown_grace_s")
    metrics_port: int | None = default("metrics_port")
    metrics_host: str = default("metrics_host")
    device: str | None = default("device")
    threads: int | None = default("threads")
    backend: str | None = default("backend")
    auto_bf16: bool = default("auto_bf16")
    cache_dir: str | None = default("cache_dir")
    reindex_timeout_s: int = default("reindex_timeout_s")
    source_roots: str | None = default("source_roots")
    source_uris: str | None = default("source_uris")
    max_file_bytes: int = default("max_file_bytes")
    parse_workers: int | None = default("parse_workers")  # a reindex's and a sync's parse pool
    parse_timeout_s: float = default("parse_timeout_s")
    parse_memory_mb: int = default("parse_memory_mb")
    ocr: str = default("ocr")
    parse_child: str | None = default("parse_child")
    http_timeout_s: float = default("http_timeout_s")
    source_retry_s: float = default("source_retry_s")
    source_park_s: float = default("source_park_s")
    source_page_objects: int = default("source_page_objects")
    role: str = default("role")
    reindex: tuple[ReindexSchedule, ...] = ()  # [[reindex]] tables: scheduled reindexing
    profile: Profile = DEFAULT_PROFILE

    def __post_init__(self) -> None:
        check_fields(self)
        check_event_loop(self.event_loop)
        try:
            check_redis_url(self.redis_url)
        except ValueError as e:
            raise ValueError(f"redis_url: {e}") from None
        if self.qdrant_url is not None:
            check_qdrant_url(self.qdrant_url)
            server_target(self.qdrant_url, self.qdrant_transport, self.qdrant_grpc_port)
        if self.role not in ("all", "encode"):
            raise ValueError(f"role: expected all or encode here, got {self.role!r}")
        if not self.metrics_host:
            raise ValueError(
                f"metrics_host: expected a host name or address, got {self.metrics_host!r}"
            )

    def __repr__(self) -> str:
        """Every field but the API key, with the credentials of every URL hidden."""
        shown = (
            f"{f.name}={redact_text(repr(getattr(self, f.name)))}" for f in fields(self) if f.repr
        )
        return f"Settings({', '.join(shown)})"


SETTING_NAMES = tuple(f.name for f in fields(Settings) if f.name in VARIABLES)


def load_settings(
    config: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """The settings: ``config`` (else ``POOLQ_CONFIG``), then the environment, then
    ``overrides`` (the flags; None values ignored). An explicit ``--qdrant-path`` beats a URL
    from the file or the environment."""
    data = config_file(config, environ)
    values = load_values(SETTING_NAMES, data, overrides, environ)
    if overrides and overrides.get("qdrant_path") and not overrides.get("qdrant_url"):
        values.pop("qdrant_url", None)
    schedules = data.get("reindex") or []
    if not isinstance(schedules, list):
        raise ValueError("config: reindex entries must be [[reindex]] tables")
    profile_tables = {k: v for k, v in data.items() if k not in ("worker", "engine", "reindex")}
    return Settings(
        **values,
        reindex=tuple(ReindexSchedule.from_dict(x) for x in schedules),
        profile=Profile.from_dict(profile_tables) if data else DEFAULT_PROFILE,
    )
