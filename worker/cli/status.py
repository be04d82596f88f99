"""``poolq status``: its flags and help; what it does is ``ingest/cli/status.py``."""

from __future__ import annotations

import typer

from poolq.ingest.cli.status import STATUS_JSON, run_status
from poolq.worker.cli.app import app
from poolq.worker.cli.options import json_option, setting_option


@app.command()
def status(
    job_ids: list[str] = typer.Argument(
        None, metavar="[JOB_ID...]", help="Jobs to report (default: all known)."
    ),
    redis_url: str | None = setting_option("redis_url"),
    as_json: bool = json_option(STATUS_JSON),
    redis_outage_limit_s: float | None = setting_option("redis_outage_limit_s", metavar="SECONDS"),
) -> None:
    """Queued, running, done and failed job counts (done and failed: within the last day, as
    the workers recorded them; failed: dead-lettered jobs until dropped or retried, and jobs
    failed before they ran); results of the given jobs; whether a worker is alive, and its
    heartbeats."""
    raise typer.Exit(run_status(job_ids or [], redis_url, as_json, redis_outage_limit_s))
