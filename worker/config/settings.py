"""Worker settings: config file (TOML), then environment, then CLI flags (increasing precedence).

Environment: ``POOLQ_CONFIG``, ``POOLQ_REDIS_URL``, ``POOLQ_QDRANT_URL``, ``POOLQ_QDRANT_PATH``,
``POOLQ_QDRANT_API_KEY``, ``POOLQ_METRICS_PORT``, ``POOLQ_METRICS_HOST``, ... (every setting
below, upper-cased). The config file's ``[worker]`` table takes the same names in lower case
without the prefix; ``[engine] backend`` (env ``POOLQ_BACKEND``, ``--backend``) picks what runs
the forwards (``torch``, ``openvino`` or ``auto``: ``worker/engine/openvino/backend.py``); the
rest of the file is the collection profile.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from poolq.sinks.store.server_target import TRANSPORTS, server_target
from poolq.wire import constants
from poolq.wire.connection import check_redis_url, redact_text
from poolq.worker.config.event_loop import check_event_loop
from poolq.worker.config.locations import check_qdrant_url
from poolq.worker.config.profile import DEFAULT_PROFILE, Profile
from poolq.worker.config.schedule import ReindexSchedule
from poolq.worker.parse.limits import DEFAULT_PARSE_MEMORY_MB, DEFAULT_PARSE_TIMEOUT_S

ENV_PREFIX = "POOLQ_"
BACKENDS = ("torch", "openvino", "auto")  # engine/openvino/backend.py BACKENDS
ENGINE_KEYS = ("backend",)  # the config's [engine] table


@dataclass(frozen=True)
class Settings:
    redis_url: str = constants.DEFAULT_REDIS_URL
    qdrant_url: str | None = None
    qdrant_path: str = constants.DEFAULT_QDRANT_PATH  # embedded Qdrant, when no URL is given
    qdrant_api_key: str | None = field(default=None, repr=False)
    # a server: "grpc" (every call, upserts encoded from the arrays: sinks/proto) or "rest"
    # (JSON, for an http(s):// URL behind an HTTP/1.1-only proxy); the gRPC port of an
    # http(s):// URL (default Qdrant's 6334); upserts in flight at once (sinks/owner.py)
    qdrant_transport: str = "grpc"
    qdrant_grpc_port: int | None = None
    qdrant_writes_in_flight: int = 4
    # the embedded folder served by a process of its own (sinks/store/process.py): converting
    # and writing points then runs beside this interpreter instead of holding its GIL
    # (default on: +30% enqueue -> durable write in bench_host_path, interleaved A/B, README)
    store_process: bool = True
    # the worker's event loop: auto (uvloop when installed), uvloop or asyncio (config/event_loop.py)
    event_loop: str = "auto"
    max_jobs: int = 32  # upper limit on running jobs; admission is by queued tokens (below)
    # a job is taken only while its engines' queued tokens stay below this (None: 8 batches of
    # the ingest engine, runtime/admission.py); jobs beyond it wait in Redis, where no timeout runs
    max_queued_tokens: int | None = None
    # deadlines (reliability/deadlines.py): a job is timed out after this long without progress
    # (nothing chunked, encoded or written), then retried with backoff and dead-lettered after
    # max_tries; job_timeout_s is the ceiling on a whole run, for runaway jobs
    job_stall_timeout_s: int = 120
    job_timeout_s: int = 3600
    max_tries: int = 5
    keep_result_s: int = 24 * 3600
    max_batch_tokens: int | None = None
    max_documents_per_job: int = constants.MAX_DOCUMENTS_PER_JOB
    max_document_bytes: int = constants.MAX_DOCUMENT_BYTES
    max_job_bytes: int = constants.MAX_JOB_BYTES  # whole job payload, refused undecoded
    shutdown_grace_s: int = 30  # SIGTERM: running jobs may finish this long, then go back
    metrics_port: int | None = None
    # where /metrics listens (with metrics_port): loopback unless widened (e.g. 0.0.0.0)
    metrics_host: str = constants.DEFAULT_METRICS_HOST
    device: str | None = None
    threads: int | None = None  # intra-op CPU threads; None: chosen (engine/cpu_budget.py)
    # torch, openvino or auto ([engine] backend; None: torch): engine/openvino/backend.py
    backend: str | None = None
    reindex_timeout_s: int = 6 * 3600
    # folders documents given by path and reindex sources are read from (os.pathsep-separated;
    # None: none); the sources of [[reindex]] entries are always allowed
    source_roots: str | None = None
    # URI prefixes documents may be fetched from and syncs may list (spaces or commas; None: none)
    source_uris: str | None = None
    # a reindex's and a sync's files: the parse stage's bounds (the same flags)
    max_file_bytes: int = constants.MAX_FILE_BYTES
    parse_workers: int | None = None  # None: DEFAULT_PARSE_WORKERS
    parse_timeout_s: float = DEFAULT_PARSE_TIMEOUT_S
    parse_memory_mb: int = DEFAULT_PARSE_MEMORY_MB
    http_timeout_s: float = 30.0  # each read of a web fetch, and the whole of one try
    source_retry_s: float = 120.0  # a failing object store or web server is retried this long
    source_park_s: float = 300.0  # a sync whose store stays down runs again this much later
    source_page_objects: int = 1000  # objects per listing page of a sync (its checkpoint step)
    reindex: tuple[ReindexSchedule, ...] = ()  # [[reindex]] tables: scheduled reindexing
    profile: Profile = DEFAULT_PROFILE
    # "all" (a parse process beside this encode worker) or "encode"; "parse" workers run on
    # ParseSettings (config/parse_settings.py), without loading these
    role: str = "all"

    def __post_init__(self) -> None:
        if self.qdrant_transport is None:  # POOLQ_QDRANT_TRANSPORT= (empty): the default
            object.__setattr__(self, "qdrant_transport", "grpc")
        if self.max_jobs < 1:
            raise ValueError(f"max_jobs must be >= 1, got {self.max_jobs}")
        if self.role not in ("all", "encode"):
            raise ValueError(f"role: expected all or encode here, got {self.role!r}")
        for name in ("job_stall_timeout_s", "job_timeout_s", "max_queued_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if self.backend is not None and self.backend not in BACKENDS:
            raise ValueError(
                f"backend: expected one of {', '.join(BACKENDS)}, got {self.backend!r}"
            )
        if self.event_loop is None:  # POOLQ_EVENT_LOOP= (empty): the default
            object.__setattr__(self, "event_loop", "auto")
        check_event_loop(self.event_loop)
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be >= 1 (or unset: chosen), got {self.threads}")
        try:
            check_redis_url(self.redis_url)
        except ValueError as e:
            raise ValueError(f"redis_url: {e}") from None
        if self.qdrant_url is not None:
            check_qdrant_url(self.qdrant_url)
            server_target(self.qdrant_url, self.qdrant_transport, self.qdrant_grpc_port)
        elif self.qdrant_transport not in TRANSPORTS:
            raise ValueError(
                f"qdrant_transport: expected one of {TRANSPORTS}, got {self.qdrant_transport!r}"
            )
        if self.qdrant_writes_in_flight < 1:
            raise ValueError(
                f"qdrant_writes_in_flight must be >= 1, got {self.qdrant_writes_in_flight}"
            )
        if not self.metrics_host or not isinstance(self.metrics_host, str):
            raise ValueError(
                f"metrics_host: expected a host name or address, got {self.metrics_host!r}"
            )

    def __repr__(self) -> str:
        """Every field but the API key, with the credentials of every URL hidden."""
        shown = (
            f"{f.name}={redact_text(repr(getattr(self, f.name)))}" for f in fields(self) if f.repr
        )
        return f"Settings({', '.join(shown)})"



_INT_FIELDS = {f.name for f in fields(Settings) if f.type in ("int", "int | None")}
_FLOAT_FIELDS = {f.name for f in fields(Settings) if f.type in ("float", "float | None")}
_BOOL_FIELDS = {f.name for f in fields(Settings) if f.type == "bool"}
_BOOL_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
_SETTING_NAMES = {f.name for f in fields(Settings)} - {"profile", "reindex"}


def _coerce(name: str, value: Any) -> Any:
    if value is None or value == "":
        return None
    if name in _BOOL_FIELDS:
        if isinstance(value, bool):
            return value
        if str(value).strip().lower() in _BOOL_WORDS:
            return _BOOL_WORDS[str(value).strip().lower()]
        raise ValueError(f"setting {name}: expected true or false, got {value!r}")
    if name in _FLOAT_FIELDS:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"setting {name}: expected a number, got {value!r}") from None
    if name in _INT_FIELDS:
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ValueError(f"setting {name}: expected an integer, got {value!r}") from None
    return value


def load_settings(
    config: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    env = os.environ if environ is None else environ
    config = config or env.get(ENV_PREFIX + "CONFIG")
    values: dict[str, Any] = {}
    profile = DEFAULT_PROFILE
    if config:
        path = Path(config)
        if not path.is_file():
            raise ValueError(f"config file {str(path)!r} does not exist")
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        worker = data.pop("worker", {}) or {}
        engine = data.pop("engine", {}) or {}
        if unknown_engine := set(engine) - set(ENGINE_KEYS):
            raise ValueError(
                f"config [engine]: unknown keys {sorted(unknown_engine)}; allowed: {list(ENGINE_KEYS)}"
            )
        values.update({k: _coerce(k, v) for k, v in engine.items()})
        schedules = data.pop("reindex", []) or []
        if not isinstance(schedules, list):
            raise ValueError("config: reindex entries must be [[reindex]] tables")
        values["reindex"] = tuple(ReindexSchedule.from_dict(x) for x in schedules)
        unknown = set(worker) - _SETTING_NAMES
        if unknown:
            raise ValueError(
                f"config [worker]: unknown keys {sorted(unknown)}; allowed: {sorted(_SETTING_NAMES)}"
            )
        values.update({k: _coerce(k, v) for k, v in worker.items()})
        profile = Profile.from_dict(data)
    for name in _SETTING_NAMES:
        if (v := env.get(ENV_PREFIX + name.upper())) is not None:
            values[name] = _coerce(name, v)
    for name, v in (overrides or {}).items():
        if v is not None:
            values[name] = v if name == "reindex" else _coerce(name, v)
    if (
        values.get("qdrant_url")
        and "qdrant_path" in values
        and overrides
        and overrides.get("qdrant_path")
    ):
        values.pop("qdrant_url")  # an explicit --qdrant-path beats a URL from file or env
    return replace(Settings(profile=profile), **values)
