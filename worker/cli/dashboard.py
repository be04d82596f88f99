"""``poolq dashboard``: its flags and help; the application is ``ingest/dashboard/``."""

from __future__ import annotations

from pathlib import Path

import typer

from poolq.worker.cli.app import app
from poolq.worker.cli.options import (
    FLAG_NAMES,
    fail,
    setting_option,
)


@app.command()
def dashboard(
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to serve on (default: this machine only)."
    ),
    port: int = typer.Option(8765, "--port", help="Port to serve on."),
    redis_url: str | None = setting_option("redis_url"),
    token: str | None = setting_option("dashboard_token"),
    direct: bool = typer.Option(
        False,
        "--direct",
        help="The search page encodes here and queries Qdrant directly, as `poolq search --direct` (loads the models and the Qdrant client on the first search).",
    ),
    config: Path | None = setting_option("config"),
    qdrant_url: str | None = setting_option("qdrant_url", help_="With --direct: Qdrant server."),
    qdrant_path: Path | None = setting_option(
        "qdrant_path", help_="With --direct: the embedded folder."
    ),
) -> None:
    """A web dashboard of the queue, the workers and the store: overview, jobs, workers, dead
    letters, reindex and search, with a JSON API under /api/. Needs the dashboard extra."""
    try:
        from poolq.ingest.dashboard.app import serve
    except ImportError as e:  # pragma: no cover - installed without the extra
        fail("dashboard", f"{e}: pip install 'poolq[dashboard]'")
    from poolq.worker.config.client_settings import load_client_settings

    try:
        chosen = load_client_settings(
            config,
            {"redis_url": redis_url, "dashboard_token": token},
            flag_names=FLAG_NAMES,
        )
    except ValueError as exc:
        fail("dashboard", exc)
    direct_run = None
    if direct:
        from poolq.worker.cli.search import direct_search

        direct_run = direct_search(config, redis_url, qdrant_url, qdrant_path, None)
    serve(chosen.redis_url, host=host, port=port, token=chosen.dashboard_token, direct=direct_run)
