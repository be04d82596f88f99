"""``poolq reindex``: its flags and help; what it does is ``ingest/cli/reindex.py`` (enqueue
one reindex now, a worker runs it; ``--wait`` follows it with progress)."""

from __future__ import annotations

import typer

from poolq.ingest.cli.reindex import run_reindex
from poolq.worker.cli.app import app
from poolq.worker.cli.options import setting_option, timeout_option


@app.command()
def reindex(
    source: str = typer.Option(
        ...,
        "--source",
        help="A JSONL file, a folder of documents (hidden ones skipped; a file's id is its "
        "absolute path, metadata.path the path inside the folder), or a bucket's prefix "
        "(s3://bucket/prefix/, gs://, az://: each object's id is its URI; the worker lists and "
        "fetches it with the cloud's standard credentials).",
    ),
    collection: str = typer.Option(..., "--collection", help="Collection (alias) to reindex."),
    full: bool = typer.Option(
        False,
        "--full",
        help="Rebuild into a new collection and switch the alias to it when complete.",
    ),
    keep_old: bool = typer.Option(
        False, "--keep-old", help="With --full: keep the previous collection after the switch."
    ),
    wait: bool = typer.Option(False, "--wait", help="Wait, with progress, and print a summary."),
    redis_url: str | None = setting_option("redis_url"),
    timeout_s: float | None = timeout_option(),
) -> None:
    """Reindex a collection from its source now: incremental by content hash (unchanged
    documents cost nothing, removed ones are deleted), or --full."""
    raise typer.Exit(run_reindex(source, collection, full, keep_old, wait, redis_url, timeout_s))
