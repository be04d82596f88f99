"""``poolq cancel``: its arguments and help; what it does is ``ingest/cli/cancel.py``."""

from __future__ import annotations

import typer

from poolq.ingest.cli.cancel import CANCEL_JSON, run_cancel
from poolq.worker.cli.app import app
from poolq.worker.cli.options import json_option, setting_option


@app.command()
def cancel(
    job_ids: list[str] = typer.Argument(..., metavar="JOB_ID..."),
    redis_url: str | None = setting_option("redis_url"),
    as_json: bool = json_option(CANCEL_JSON),
) -> None:
    """Cancel jobs: a queued job is taken out of the queue and never runs; a running one stops
    at its next batch boundary, keeping the points it wrote. Either way its status becomes
    `cancelled`; it is not retried and not dead-lettered."""
    raise typer.Exit(run_cancel(job_ids, redis_url, as_json))
