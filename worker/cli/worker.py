"""``poolq worker``: run an ingestion worker (arq) on this machine."""

from __future__ import annotations

from pathlib import Path

import typer

from poolq.worker.cli.app import app


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

    try:
        configure(log_format)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--log-format") from None
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
        typer.echo(f"poolq worker: error: {exc}", err=True)
        raise typer.Exit(2) from None
    if not settings.qdrant_url:  # before any model loads: the folder may be refused
        from poolq.sinks.store import check_folder

        try:
            check_folder(settings.qdrant_path)
        except (ValueError, RuntimeError, OSError) as exc:
            typer.echo(f"poolq worker: error: {exc}", err=True)
            raise typer.Exit(2) from None
    run_worker(settings, burst=burst)
