"""``poolq dashboard``: its flags and help; the application is ``ingest/dashboard/``."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from poolq.worker.cli.app import app
from poolq.worker.cli.options import config_option, fail, redis_url_option


@app.command()
def dashboard(
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to serve on (default: this machine only)."
    ),
    port: int = typer.Option(8765, "--port", help="Port to serve on."),
    redis_url: str | None = redis_url_option(),
    token: str | None = typer.Option(
        None,
        "--token",
        envvar="POOLQ_DASHBOARD_TOKEN",
        show_envvar=True,
        help="What actions (retry, drop, cancel) need, sent as 'Authorization: Bearer TOKEN'; without it the dashboard is read-only.",
    ),
    direct: bool = typer.Option(
        False,
        "--direct",
        help="The search page encodes here and queries Qdrant directly, as `poolq search --direct` (loads the models and the Qdrant client on the first search).",
    ),
    config: Path | None = config_option(),
    qdrant_url: str | None = typer.Option(
        None, "--qdrant-url", help="With --direct: Qdrant server (env POOLQ_QDRANT_URL)."
    ),
    qdrant_path: Path | None = typer.Option(
        None, "--qdrant-path", help="With --direct: embedded folder (env POOLQ_QDRANT_PATH)."
    ),
) -> None:
    """A web dashboard of the queue, the workers and the store: overview, jobs, workers, dead
    letters, reindex and search, with a JSON API under /api/. Needs the dashboard extra."""
    try:
        from poolq.ingest.dashboard.app import serve
    except ImportError as e:  # pragma: no cover - installed without the extra
        fail("dashboard", f"{e}: pip install 'poolq[dashboard]'")
    from poolq.ingest.cli.command_env import resolve_redis_url

    direct_run = None
    if direct:
        from poolq.worker.cli.search import direct_search

        direct_run = direct_search(config, redis_url, qdrant_url, qdrant_path, None)
    serve(
        resolve_redis_url(redis_url),
        host=host,
        port=port,
        token=token or os.environ.get("POOLQ_DASHBOARD_TOKEN") or None,
        direct=direct_run,
    )
