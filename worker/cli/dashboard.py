"""``poolq dashboard``: its flags and help; the application is ``ingest/dashboard/``."""

from __future__ import annotations

import os

import typer

from poolq.worker.cli.app import app
from poolq.worker.cli.options import fail, redis_url_option


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
) -> None:
    """A web dashboard of the queue, the workers and the store: overview, jobs, workers, dead
    letters, reindex and search, with a JSON API under /api/. Needs the dashboard extra."""
    try:
        from poolq.ingest.dashboard.app import serve
    except ImportError as e:  # pragma: no cover - installed without the extra
        fail("dashboard", f"{e}: pip install 'poolq[dashboard]'")
    from poolq.ingest.cli.command_env import resolve_redis_url

    serve(
        resolve_redis_url(redis_url),
        host=host,
        port=port,
        token=token or os.environ.get("POOLQ_DASHBOARD_TOKEN") or None,
    )
