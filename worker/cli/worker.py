"""``poolq worker``: run an ingestion worker (arq) on this machine."""

from __future__ import annotations

from pathlib import Path

import typer

from poolq.worker.cli.app import app
from poolq.worker.cli.options import fail


@app.command()
def worker(
    config: Path | None = typer.Option(None, "--config", help="TOML config (env POOLQ_CONFIG)."),
    redis_url: str | None = typer.Option(None, "--redis-url", help="env POOLQ_REDIS_URL"),
    qdrant_url: str | None = typer.Option(
        None, "--qdrant-url", help="Qdrant server (env POOLQ_QDRANT_URL)."
    ),
    qdrant_path: Path | None = typer.Option(
        None, "--qdrant-path", help="Embedded Qdrant folder (env POOLQ_QDRANT_PATH)."
    ),
    qdrant_api_key: str | None = typer.Option(
        None, "--qdrant-api-key", help="API key of a Qdrant server (env POOLQ_QDRANT_API_KEY)."
    ),
    device: str | None = typer.Option(
        None, "--device", help="cpu, cuda or cuda:N (default: CUDA when present)."
    ),
    max_jobs: int | None = typer.Option(
        None, "--max-jobs", min=1, help="Concurrent jobs (default 32)."
    ),
    burst: bool = typer.Option(False, "--burst", help="Exit once the queue is empty."),
    metrics_port: int | None = typer.Option(
        None,
        "--metrics-port",
        min=1,
        max=65535,
        help="Serve Prometheus /metrics on this port (env POOLQ_METRICS_PORT).",
    ),
    shutdown_grace_s: int | None = typer.Option(
        None,
        "--shutdown-grace",
        min=0,
        help="On SIGTERM, seconds running jobs may take to finish before they go back to the "
        "queue (default 30).",
    ),
    log_format: str = typer.Option(
        "text", "--log-format", help="text or json (one JSON object per line, with job ids)."
    ),
) -> None:
    """Run an ingestion worker: drain jobs from Redis, encode, write to Qdrant."""
    from poolq.worker.app.worker_settings import run_worker
    from poolq.worker.config.settings import load_settings

    if qdrant_url and qdrant_path:
        raise typer.BadParameter("give --qdrant-url or --qdrant-path, not both")
    from poolq.worker.observability.logs import configure
    from poolq.worker.wire.connection import redact_log_handlers

    try:
        configure(log_format)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--log-format") from None
    redact_log_handlers()  # no credentials in any log line, arq's and redis-py's included
    try:
        settings = load_settings(
            config,
            {
                "redis_url": redis_url,
                "qdrant_url": qdrant_url,
                "qdrant_path": str(qdrant_path) if qdrant_path else None,
                "qdrant_api_key": qdrant_api_key,
                "device": device,
                "max_jobs": max_jobs,
                "metrics_port": metrics_port,
                "shutdown_grace_s": shutdown_grace_s,
            },
        )
    except ValueError as exc:
        fail("worker", exc)
    from redis.exceptions import RedisError

    try:
        run_worker(settings, burst=burst)
    except (RedisError, ConnectionError) as exc:  # Redis gone for longer than the retries ride out
        fail("worker", exc, 1)
