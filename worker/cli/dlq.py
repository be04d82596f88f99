"""``poolq dlq list|retry|drop``: its arguments and help; what it does is
``ingest/cli/dlq.py``."""

from __future__ import annotations

import typer

from poolq.ingest.cli.dlq import DLQ_JSON, run_dlq
from poolq.worker.cli.app import app
from poolq.worker.cli.options import json_option, setting_option


@app.command()
def dlq(
    action: str = typer.Argument(..., metavar="list|retry|drop"),
    job_ids: list[str] = typer.Argument(None, metavar="[JOB_ID...]"),
    all_: bool = typer.Option(False, "--all", help="retry/drop: every dead-lettered job."),
    redis_url: str | None = setting_option("redis_url"),
    as_json: bool = json_option(DLQ_JSON),
) -> None:
    """The dead-letter list: jobs that failed for good, with their errors. `retry` enqueues
    them again (new job ids), `drop` forgets them; either way they no longer count as failed
    in `poolq status`."""
    raise typer.Exit(run_dlq(action, job_ids or [], all_, redis_url, as_json))
