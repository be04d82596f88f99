"""``poolq worker``: run an ingestion worker (arq) on this machine.

Before any model loads, everything a user can get wrong is checked, each failure one line within
seconds: the URLs (:func:`~poolq.wire.connection.check_redis_url`, an http(s) Qdrant URL)
and the embedded folder (one worker per folder: :mod:`poolq.sinks.folder_lock`) before anything
heavy is imported, then the settings, then Redis answering
(:func:`~poolq.wire.connection.probe_redis`) and a Qdrant server's port answering.
"""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import typer

from poolq.wire import constants
from poolq.worker.cli.app import app
from poolq.worker.cli.options import fail

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
    host, port = parts.hostname or "localhost", parts.port or 6333
    if grpc_port is not None:
        port = grpc_port
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
    config: Path | None = typer.Option(None, "--config", help="TOML config (env POOLQ_CONFIG)."),
    redis_url: str | None = typer.Option(
        None,
        "--redis-url",
        help=f"Redis of the queue (env POOLQ_REDIS_URL; default {constants.DEFAULT_REDIS_URL}).",
    ),
    qdrant_url: str | None = typer.Option(
        None, "--qdrant-url", help="Qdrant server (env POOLQ_QDRANT_URL; default: embedded)."
    ),
    qdrant_path: Path | None = typer.Option(
        None,
        "--qdrant-path",
        help="Embedded Qdrant folder, one worker per folder (env POOLQ_QDRANT_PATH; default "
        f"{constants.DEFAULT_QDRANT_PATH}).",
    ),
    qdrant_api_key: str | None = typer.Option(
        None, "--qdrant-api-key", help="API key of a Qdrant server (env POOLQ_QDRANT_API_KEY)."
    ),
    qdrant_transport: str | None = typer.Option(
        None,
        "--qdrant-transport",
        help="grpc (default: an http(s):// URL's host on port 6334, or a grpc:// URL) or rest "
        "(JSON over the http(s):// URL) (env POOLQ_QDRANT_TRANSPORT).",
    ),
    device: str | None = typer.Option(
        None, "--device", help="cpu, cuda or cuda:N (default: CUDA when present)."
    ),
    max_jobs: int | None = typer.Option(
        None, "--max-jobs", min=1, help="Upper limit on running jobs (default 32)."
    ),
    max_queued_tokens: int | None = typer.Option(
        None,
        "--max-queued-tokens",
        min=1,
        help="Take a bulk job only while the engines hold fewer queued tokens (default 8 batches).",
    ),
    job_stall_timeout_s: int | None = typer.Option(
        None,
        "--job-stall-timeout",
        min=1,
        help="Time a job out after this many seconds without progress (default 120).",
    ),
    job_timeout_s: int | None = typer.Option(
        None, "--job-timeout", min=1, help="Ceiling on one run of a job, seconds (default 3600)."
    ),
    threads: int | None = typer.Option(
        None,
        "--threads",
        min=1,
        help="Intra-op CPU threads (env POOLQ_THREADS; default: chosen from the CPUs this "
        "process may use, less those other processes hold, and re-chosen while it runs).",
    ),
    backend: str | None = typer.Option(
        None,
        "--backend",
        help="torch, openvino or auto: what runs the CPU forwards (env POOLQ_BACKEND, config "
        "[engine] backend; default torch). openvino needs poolq[openvino]; auto picks it when "
        "installed and its outputs pass the quality gate.",
    ),
    burst: bool = typer.Option(False, "--burst", help="Exit once the queue is empty."),
    metrics_port: int | None = typer.Option(
        None,
        "--metrics-port",
        min=1,
        max=65535,
        help="Serve Prometheus /metrics on this port (env POOLQ_METRICS_PORT).",
    ),
    metrics_host: str | None = typer.Option(
        None,
        "--metrics-host",
        help="Address /metrics listens on (env POOLQ_METRICS_HOST; default "
        f"{constants.DEFAULT_METRICS_HOST}, this machine only; 0.0.0.0 for every interface).",
    ),
    shutdown_grace_s: int | None = typer.Option(
        None,
        "--shutdown-grace",
        min=0,
        help="On SIGTERM or Ctrl-C, seconds running jobs may take to finish before they go back "
        "to the queue (default 30); a second Ctrl-C stops at once.",
    ),
    log_format: str = typer.Option(
        "text", "--log-format", help="text or json (one JSON object per line, with job ids)."
    ),
    role: str = typer.Option(
        "all",
        "--role",
        envvar="POOLQ_ROLE",
        help="all (parse files and encode: the default), parse (only the parse stage: no torch, "
        "no models, no store) or encode (only encoding and writing) (env POOLQ_ROLE).",
    ),
    parse_workers: int | None = typer.Option(
        None,
        "--parse-workers",
        min=1,
        help="Processes parsing files at once, each one file at a time (env "
        "POOLQ_PARSE_WORKERS; default half the CPUs, 1 to 4).",
    ),
    parse_timeout_s: float | None = typer.Option(
        None,
        "--parse-timeout",
        min=0.1,
        help="Seconds one file may take to parse before it fails as parse_timeout (env "
        "POOLQ_PARSE_TIMEOUT_S; default 120).",
    ),
    parse_memory_mb: int | None = typer.Option(
        None,
        "--parse-memory",
        min=64,
        help="MB of memory a parse process may take above its start before the file fails as "
        "too_large (env POOLQ_PARSE_MEMORY_MB; default 1024).",
    ),
    max_file_bytes: int | None = typer.Option(
        None,
        "--max-file-bytes",
        min=1,
        help="Refuse files over this many bytes as too_large (env POOLQ_MAX_FILE_BYTES; "
        "default 33554432, 32 MiB).",
    ),
) -> None:
    """Run an ingestion worker: drain jobs from Redis, parse files, encode, write to Qdrant."""
    from poolq.worker.cli.parse_role import check_role, parse_overrides, parse_process

    check_role(role)
    from poolq.worker.config.locations import check_qdrant_url, resolve_locations
    from poolq.worker.engine.cpu.cpu_threads import CpuProbe

    cpu_probe = CpuProbe.start()  # neighbours measured while the worker starts
    from poolq.wire.connection import check_redis_url

    if qdrant_url and qdrant_path:
        raise typer.BadParameter("give --qdrant-url or --qdrant-path, not both")
    for flag, value, check in [
        ("--redis-url", redis_url, check_redis_url),
        ("--qdrant-url", qdrant_url, check_qdrant_url),
    ]:
        if value is not None:
            try:
                check(value)
            except ValueError as exc:
                fail("worker", f"{flag}: {str(exc).removeprefix('qdrant_url: ')}")
    from poolq.wire.connection import redact_log_handlers
    from poolq.worker.observability.logs import configure

    try:
        configure(log_format)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--log-format") from None
    redact_log_handlers()  # no credentials in any log line, arq's and redis-py's included
    parse_flags = parse_overrides(
        redis_url or "", parse_workers, parse_timeout_s, parse_memory_mb, max_file_bytes,
        shutdown_grace_s,
    )  # fmt: skip
    if role == "parse":
        from poolq.worker.cli.parse_role import run_parse_role
        from poolq.worker.config.locations import resolve_locations as locations

        try:
            parse_flags["redis_url"] = locations(config, {"redis_url": redis_url}).redis_url
        except ValueError as exc:
            fail("worker", exc)
        run_parse_role(parse_flags, burst=burst)
        return
    overrides = {
        "redis_url": redis_url,
        "qdrant_url": qdrant_url,
        "qdrant_path": str(qdrant_path) if qdrant_path else None,
        "qdrant_api_key": qdrant_api_key,
        "qdrant_transport": qdrant_transport,
        "device": device,
        "max_jobs": max_jobs,
        "max_queued_tokens": max_queued_tokens,
        "job_stall_timeout_s": job_stall_timeout_s,
        "job_timeout_s": job_timeout_s,
        "threads": threads,
        "backend": backend,
        "metrics_port": metrics_port,
        "metrics_host": metrics_host,
        "shutdown_grace_s": shutdown_grace_s,
        "role": role,
        # a reindex's and a sync's files: read with the parse stage's bounds
        "parse_workers": parse_workers,
        "parse_timeout_s": parse_timeout_s,
        "parse_memory_mb": parse_memory_mb,
        "max_file_bytes": max_file_bytes,
    }
    try:  # where Redis and Qdrant are, from flags, environment or config: checked first
        where = resolve_locations(config, overrides)
        check_redis_url(where.redis_url)
        if where.qdrant_url:
            check_qdrant_url(where.qdrant_url)
    except ValueError as exc:
        fail("worker", exc)
    _hold_folder(where)
    from poolq.worker.config.settings import load_settings  # the profile: imports torch

    try:
        settings = load_settings(config, overrides)
    except ValueError as exc:
        fail("worker", exc)
    _probe(settings)
    if settings.backend is not None:  # the loader reads it (engine/openvino/backend.py)
        os.environ["POOLQ_BACKEND"] = settings.backend
    from poolq.worker.engine.cpu.cpu_budget import RESERVED_WORKER_CPUS, explicit_threads

    try:
        explicit_threads(settings.threads)
    except ValueError as exc:  # POOLQ_THREADS=0, OMP_NUM_THREADS=x
        fail("worker", exc)
    from redis.exceptions import RedisError

    from poolq.worker.app.worker_settings import run_worker

    parse_flags["redis_url"] = settings.redis_url
    parse_stage = (
        parse_process(parse_flags, log_format, burst=burst)
        if role == "all"
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
