"""Every setting poolq reads, declared once: its name, type, default, unit, the roles that read it.

A setting ``NAME`` is ``name`` in the config file's ``[worker]`` table, ``POOLQ_NAME`` in the
environment and, where a command has one, a flag (``--name``, or as the command spells it).
:mod:`~poolq.worker.config.loader` reads them (file, then environment, then flags) with one
coercion; the role settings (:class:`~poolq.worker.config.settings.Settings` for the encode
stage, :class:`~poolq.worker.config.parse_settings.ParseSettings` for the parse stage,
:class:`~poolq.worker.config.client_settings.ClientSettings` for the client) take their
defaults from here. The generated configuration reference lists every entry.

The standard library and ``wire/`` only: the client imports this module.

Roles: ``client`` (the client library and its commands: enqueue, status, search, dlq, cancel),
``dashboard``, ``parse`` (the parse stage: ``poolq worker --role parse`` and the parse process of
``--role all``), ``encode`` (the encode stage: ``poolq worker --role encode`` and ``--role all``,
``poolq encode``, ``search --direct``, ``export``, ``import``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from poolq.wire import constants

ENV_PREFIX: Final = "POOLQ_"
ROLES: Final = ("client", "dashboard", "parse", "encode")
ALL: Final = ROLES
WORKERS: Final = ("parse", "encode")


@dataclass(frozen=True)
class Variable:
    """One setting. ``type``: what its values are (``str``, ``int``, ``float`` or ``bool``);
    ``default``: its value when nothing sets it (None: unset, the help says what that means);
    ``unit``: of a number (``s``, ``bytes``, ``MB``, ...); ``choices``: the words a text
    setting takes (empty: any); ``minimum``: the least a number may be; ``secret``: never shown."""

    name: str
    type: type
    default: object
    roles: tuple[str, ...]
    help: str
    unit: str = ""
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    secret: bool = False
    file: bool = True  # may be set in the config file's [worker] table

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


def _v(
    name: str, type_: type, default: object, roles: tuple[str, ...], help: str, **kw: Any
) -> Variable:
    return Variable(name, type_, default, roles, " ".join(help.split()), **kw)


# fmt: off
_DECLARED = (
    # --- where things are --------------------------------------------------------------------
    _v("config", str, None, ALL, file=False,
       help="The TOML config file (the [worker] table and the collection profile)."),
    _v("redis_url", str, constants.DEFAULT_REDIS_URL, ALL,
       help="Redis of the queue."),
    _v("qdrant_url", str, None, ("encode",),
       help="A Qdrant server (http(s):// or grpc(s)://); unset: the embedded folder "
            "(qdrant_path)."),
    _v("qdrant_path", str, constants.DEFAULT_QDRANT_PATH, ("encode",),
       help="The embedded Qdrant folder, one worker per folder."),
    _v("qdrant_api_key", str, None, ("encode",), secret=True,
       help="API key of a Qdrant server."),
    _v("qdrant_transport", str, "grpc", ("encode",), choices=("grpc", "rest"),
       help="How a Qdrant server is spoken to: grpc (an http(s):// URL's host on "
            "qdrant_grpc_port) or rest (JSON over the http(s):// URL, for a proxy that passes "
            "only HTTP/1.1)."),
    _v("qdrant_grpc_port", int, None, ("encode",), unit="port", minimum=1,
       help="The gRPC port of an http(s):// Qdrant URL (unset: 6334)."),
    _v("qdrant_writes_in_flight", int, 4, ("encode",), minimum=1,
       help="Upserts to a Qdrant server in flight at once."),
    _v("store_process", bool, True, ("encode",),
       help="Serve the embedded folder from a process of its own, so converting and writing "
            "points runs beside the worker's interpreter."),
    # --- the encode stage ----------------------------------------------------------------------
    _v("role", str, "all", WORKERS, choices=("all", "parse", "encode"),
       help="What a worker runs: all (the parse stage in a process of its own beside the encode "
            "stage), parse (no torch, no models, no store) or encode."),
    _v("event_loop", str, "auto", ("encode",), choices=("auto", "uvloop", "asyncio"),
       help="The worker's event loop: auto (uvloop when installed), uvloop or asyncio."),
    _v("max_jobs", int, 32, ("encode",), unit="jobs", minimum=1,
       help="Ingest and reindex jobs an encode worker runs at once, at most (it takes a bulk job "
            "only while max_queued_tokens has room)."),
    _v("max_queued_tokens", int, None, ("encode",), unit="tokens", minimum=1,
       help="Take a bulk job only while the engines hold fewer queued tokens than this (unset: 8 "
            "batches of the ingest engine)."),
    _v("job_stall_timeout_s", int, 120, ("encode",), unit="s", minimum=1,
       help="Time a job out after this long without progress (nothing parsed, chunked, encoded or"
            " written); it is retried, then dead-lettered after max_tries."),
    _v("job_timeout_s", int, 3600, WORKERS, unit="s", minimum=1,
       help="Ceiling on one run of a job, for runaway jobs."),
    _v("max_tries", int, 5, WORKERS, minimum=1,
       help="Runs of a job before it is dead-lettered."),
    _v("keep_result_s", int, 24 * 3600, WORKERS, unit="s", minimum=1,
       help="How long a job's result is kept in Redis."),
    _v("max_batch_tokens", int, None, ("encode",), unit="tokens", minimum=1,
       help="Token budget of one forward pass (unset: 2048 on a CPU, 16384 on CUDA)."),
    _v("max_documents_per_job", int, constants.MAX_DOCUMENTS_PER_JOB, ("encode",), minimum=1,
       help="Documents in one ingest job, at most (clients split their input to fit)."),
    _v("max_document_bytes", int, constants.MAX_DOCUMENT_BYTES, ("encode",),
       unit="bytes", minimum=1,
       help="UTF-8 text of one document, at most."),
    _v("max_job_bytes", int, constants.MAX_JOB_BYTES, WORKERS, unit="bytes", minimum=1,
       help="A whole job's payload, at most; a larger one is refused before it is decoded."),
    _v("shutdown_grace_s", int, 30, WORKERS, unit="s", minimum=0,
       help="On SIGTERM or Ctrl-C, how long running jobs may take to finish before they go back "
            "to the queue."),
    _v("metrics_port", int, None, ("encode",), unit="port", minimum=1,
       help="Serve Prometheus /metrics on this port (unset: off)."),
    _v("metrics_host", str, constants.DEFAULT_METRICS_HOST, ("encode",),
       help="Address /metrics listens on (0.0.0.0: every interface)."),
    _v("device", str, None, ("encode",),
       help="cpu, cuda or cuda:N (unset: CUDA when present)."),
    _v("threads", int, None, ("encode",), unit="threads", minimum=1,
       help="Intra-op CPU threads (unset: chosen from the CPUs this process may use, less those "
            "other processes hold; OMP_NUM_THREADS also fixes it)."),
    _v("backend", str, None, ("encode",), choices=("torch", "openvino", "auto"),
       help="What runs the CPU forwards: torch, openvino (poolq[openvino]) or auto (OpenVINO when"
            " installed and its outputs pass the quality gate); unset: torch. The config file "
            "also takes it as [engine] backend."),
    _v("auto_bf16", bool, True, ("encode",),
       help="Let dtype auto pick bfloat16 on CPUs that compute it natively (false: float32, the "
            "same outputs on every machine)."),
    _v("cache_dir", str, None, ("encode",),
       help="Where converted models and checkpoint fingerprints are cached (unset: "
            "$XDG_CACHE_HOME/poolq, else ~/.cache/poolq)."),
    _v("reindex_timeout_s", int, 6 * 3600, ("encode",), unit="s", minimum=1,
       help="Ceiling on one run of a reindex job."),
    # --- what a worker may read ------------------------------------------------------------------
    _v("source_roots", str, None, WORKERS,
       help="Folders documents given by path (and file:// URIs) are read from, and a reindex may "
            "read, separated by ':' (os.pathsep). Unset: none, and a document given by path is "
            "refused; documents sent as bytes need no roots."),
    _v("source_uris", str, None, WORKERS,
       help="URI prefixes (s3://bucket/prefix/, https://host/) documents may be fetched from (and"
            " web fetches redirected to) and a reindex may sync, separated by spaces or commas; a"
            " prefix ends at a '/'. Unset: none, and a document given by URI is refused; a "
            "reindex syncs only the config's own [[reindex]] sources."),
    _v("max_file_bytes", int, constants.MAX_FILE_BYTES, WORKERS, unit="bytes", minimum=1,
       help="A file to parse, at most, as sent or fetched; a larger one fails as too_large."),
    _v("http_timeout_s", float, 30.0, WORKERS, unit="s", minimum=0.001,
       help="Bounds each read of a web fetch and its connection."),
    _v("source_retry_s", float, 120.0, WORKERS, unit="s", minimum=0,
       help="How long an object store or web server that fails (429, 5xx, timeouts, resets) is "
            "retried, with backoff, before the fetch fails."),
    _v("source_park_s", float, 300.0, ("encode",), unit="s", minimum=0,
       help="A sync whose store stays down is parked and enqueued again this much later."),
    _v("source_page_objects", int, 1000, ("encode",), unit="objects", minimum=1,
       help="Objects in one listing page of a sync (its checkpoint step)."),
    # --- the parse stage --------------------------------------------------------------------------
    _v("parse_workers", int, None, WORKERS, unit="processes", minimum=1,
       help="Processes parsing files at once, each one file at a time (unset: half the CPUs, 1 to"
            " 4); the encode stage's reindex and sync read files with as many."),
    _v("parse_max_jobs", int, 8, ("parse",), unit="jobs", minimum=1,
       help="Parse jobs a parse worker runs at once (each waits for a free parse process per "
            "file)."),
    _v("parse_timeout_s", float, constants.PARSE_TIMEOUT_S, WORKERS, unit="s", minimum=0.1,
       help="How long one file may take to parse before it fails as parse_timeout."),
    _v("parse_memory_mb", int, constants.PARSE_MEMORY_MB, WORKERS, unit="MB", minimum=64,
       help="Memory a parse process may take above its start before the file fails as too_large."),
    _v("ocr", str, constants.OCR, WORKERS, choices=("auto", "never", "always"),
       help="Which pages OCR reads: auto (pages without a usable text layer, and image files; "
            "none where the ocr extra is not installed), always (every page, its text layer "
            "ignored; needs the ocr extra) or never."),
    _v("parse_child", str, None, WORKERS,
       help="The module the parse processes run, a parse job's and a reindex's (unset: "
            "poolq.worker.parse.child; a test swaps in one that hangs or crashes on marked "
            "files)."),
    # --- the client ------------------------------------------------------------------------------
    _v("redis_outage_limit_s", float, 300.0, ("client",), unit="s", minimum=0,
       help="How long a client waits for Redis to come back (wait, status, enqueue --wait) before"
            " it gives up."),
    _v("dashboard_token", str, None, ("dashboard",), secret=True,
       help="What the dashboard's actions (retry, drop, cancel) need, sent as 'Authorization: "
            "Bearer TOKEN' (unset: the dashboard is read-only)."),
)
# fmt: on

VARIABLES: Final[dict[str, Variable]] = {v.name: v for v in _DECLARED}
assert len(VARIABLES) == len(_DECLARED), "a setting declared twice"


def default(name: str) -> Any:
    """The declared default of setting ``name`` (a role's settings class field takes it)."""
    return VARIABLES[name].default
