"""``poolq worker``: run an ingestion worker (arq) on this machine.

Before any model loads, everything a user can get wrong is checked, each failure one line within
seconds: the URLs (:func:`~poolq.wire.connection.check_redis_url`, an http(s) Qdrant URL)
and the embedded folder (one worker per folder: :mod:`poolq.sinks.folder_lock`) before anything
heavy is imported, then the settings, then Redis answering
(:func:`~poolq.wire.connection.probe_redis`) and a Qdrant server's port answering.
"""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import typer

from poolq.worker.cli.app import app
from poolq.worker.cli.options import (
    FLAG_NAMES,
    fail,
    setting_option,
)
from poolq.worker.config.variables import VARIABLES

if TYPE_CHECKING:
    from poolq.worker.config.locations import Locations
    from poolq.worker.config.settings import Settings

QDRANT_PROBE_TIMEOUT_S = 5.0


def probe_qdrant(
    url: str, timeout_s: float = QDRANT_PROBE_TIMEOUT_S, grpc_port: int | None = None
) -> None:
    """The Qdrant server's host resolves and its port accepts a connection within
    ``timeout_s``, else ``ConnectionError`` naming host and port (``grpc_port``: the port
    the store talks gRPC on; else the URL's, defaulting to 6333, as in qdrant-client)."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = grpc_port if grpc_port is not None else parts.port or 6333
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        if isinstance(e, TimeoutError | socket.timeout):
            reason = f"no answer within {timeout_s:g}s"
        raise ConnectionError(f"Qdrant is not reachable at {host}:{port}: {reason}") from None


@app.command()
def worker(
    config: Path | None = setting_option("config"),
    redis_url: str | None = setting_option("redis_url"),
    qdrant_url: str | None = setting_option("qdrant_url"),
    qdrant_path: Path | None = setting_option("qdrant_path"),
    qdrant_api_key: str | None = setting_option("qdrant_api_key"),
    qdrant_transport: str | None = setting_option("qdrant_transport"),
    device: str | None = setting_option("device"),
    max_jobs: int | None = setting_option("max_jobs"),
    max_queued_tokens: int | None = setting_option("max_queued_tokens"),
    job_stall_timeout_s: int | None = setting_option("job_stall_timeout_s"),
    job_timeout_s: int | None = setting_option("job_timeout_s"),
    threads: int | None = setting_option("threads"),
    backend: str | None = setting_option("backend"),
    burst: bool = typer.Option(False, "--burst", help="Exit once the queue is empty."),
    metrics_port: int | None = setting_option("metrics_port"),
    metrics_host: str | None = setting_option("metrics_host"),
    shutdown_grace_s: int | None = setting_option(
        "shutdown_grace_s",
        VARIABLES["shutdown_grace_s"].help.rstrip(".") + "; a second Ctrl-C stops at once",
    ),
    log_format: str = typer.Option(
        "text", "--log-format", help="text or json (one JSON object per line, with job ids)."
    ),
    role: str | None = setting_option("role"),
    parse_workers: int | None = setting_option("parse_workers"),
    parse_max_jobs: int | None = setting_option("parse_max_jobs"),
    parse_timeout_s: float | None = setting_option("parse_timeout_s"),
    parse_memory_mb: int | None = setting_option("parse_memory_mb"),
    ocr: str | None = setting_option("ocr"),
    max_file_bytes: int | None = setting_option("max_file_bytes"),
    source_roots: str | None = setting_option("source_roots"),
) -> None:
    """Run an ingestion worker: drain jobs from Redis, parse files, encode, write to Qdrant."""
    flags = {k: v for k, v in locals().items() if k in VARIABLES}
    flags["qdrant_path"] = str(qdrant_path) if qdrant_path else None
    from poolq.worker.config.loader import load_values

    try:
        early = load_values(("role", "ocr"), config, flags, flag_names=FLAG_NAMES)
    except ValueError as exc:
        fail("worker", exc)
    chosen = early.get("role", "all")
    if chosen != "encode" and early.get("ocr") == "always":  # before the parse stage starts
        from poolq.worker.parse.ocr_engine import missing

        if (why := missing()) is not None:
            fail("worker", f"ocr: always, but {why}")
    from poolq.worker.cli.parse_role import parse_process, run_parse_role
    from poolq.worker.config.locations import resolve_locations
    from poolq.worker.engine.cpu.cpu_threads import CpuProbe

    cpu_probe = CpuProbe.start()  # neighbours measured while the worker starts
    if qdrant_url and qdrant_path:
        raise typer.BadParameter("give --qdrant-url or --qdrant-path, not both")
    from poolq.wire.connection import redact_log_handlers
    from poolq.worker.observability.logs import configure

    try:
        configure(log_format)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--log-format") from None
    redact_log_handlers()  # no credentials in any log line, arq's and redis-py's included
    if chosen == "parse":
        run_parse_role(config, flags, burst=burst)
        return
    try:  # where Redis and Qdrant are, from flags, environment or config: checked first
        where = resolve_locations(config, flags)
    except ValueError as exc:
        fail("worker", exc)
    _hold_folder(where)
    from poolq.worker.config.settings import load_settings  # the profile: imports torch

    try:
        settings = load_settings(config, flags)
    except ValueError as exc:
        fail("worker", exc)
    _probe(settings)
    from poolq.worker.engine.cpu.cpu_budget import RESERVED_WORKER_CPUS, explicit_threads

    try:
        explicit_threads(settings.threads)
    except ValueError as exc:  # OMP_NUM_THREADS=x
        fail("worker", exc)
    from redis.exceptions import RedisError

    from poolq.worker.app.worker_settings import run_worker

    parse_stage = (
        parse_process(config, flags, log_format, burst=burst)
        if settings.role == "all"
        else contextlib.nullcontext()
    )
    try:
        with parse_stage, cpu_probe.applied(settings.threads, RESERVED_WORKER_CPUS):
            run_worker(settings, burst=burst)
    except (RedisError, ConnectionError) as exc:  # Redis gone for longer than the retries ride out
        fail("worker", exc, 1)


def _hold_folder(where: Locations) -> None:
    """One worker per embedded folder: refused in the time the command takes to start (nothing
    heavy is imported yet), instead of after the models loaded."""
    from poolq.sinks.folder_lock import FolderLockedError, hold_folder

    if where.qdrant_url:
        return
    try:
        hold_folder(where.qdrant_path)  # held until the process exits
    except (FolderLockedError, OSError) as exc:
        fail("worker", exc, 1)
    from poolq.sinks.store import check_folder

    try:  # a local-mode folder (with the way to move it), or one the store library holds
        check_folder(where.qdrant_path)
    except (ValueError, RuntimeError, OSError) as exc:
        fail("worker", exc)


def _probe(settings: Settings) -> None:
    """Redis and the Qdrant server answer, or one line within seconds (instead of arq's
    reconnect loop, or a first job that fails)."""
    from poolq.wire.connection import probe_redis

    try:
        probe_redis(settings.redis_url)
        if settings.qdrant_url:
            from poolq.sinks.store.server_target import server_target

            target = server_target(
                settings.qdrant_url, settings.qdrant_transport, settings.qdrant_grpc_port
            )
            port = target.grpc_port if target.transport == "grpc" else None
            probe_qdrant(settings.qdrant_url, grpc_port=port)
            from poolq.sinks.store.probe import check_speaks_qdrant

            check_speaks_qdrant(target, settings.qdrant_api_key)
    except (ConnectionError, OSError) as exc:
        fail("worker", exc, 1)
