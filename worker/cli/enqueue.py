"""``poolq enqueue``: its flags and help; what it does is ``ingest/cli/enqueue.py`` (read and
check the input, enqueue, ``--wait``)."""

from __future__ import annotations

from pathlib import Path

import typer

from poolq.ingest.cli.enqueue import EPILOG, JSON_SHAPES, Args, run_enqueue
from poolq.wire.uris import is_uri
from poolq.worker.cli.app import app
from poolq.worker.cli.options import json_option, setting_option, timeout_option


@app.command(epilog=EPILOG)
def enqueue(
    input_path: str = typer.Argument(
        ...,
        metavar="INPUT",
        help="A JSONL file (one {id, text, metadata} object a line), a folder of documents "
        "(PDF, HTML, DOCX, PPTX, EPUB, Markdown, text; the type is sniffed from the bytes, and "
        "images, stylesheets and archives are skipped): a file's id is its absolute path, "
        "metadata.path and the citation's source its path inside the folder; hidden files and "
        "folders are skipped. Or a bucket's prefix (s3://bucket/prefix/, gs://, az://: every "
        "object of a type the workers parse, by name; needs poolq[sources]) or one object's "
        "URI: the workers fetch each object, whose id and citation source are its URI.",
    ),
    urls: bool = typer.Option(
        False,
        "--urls",
        help="INPUT is a file of URLs (https://, s3://...), one a line: the "
        "workers fetch each; blank lines and # comments are skipped.",
    ),
    collection: str = typer.Option(..., "--collection", help="Qdrant collection to write."),
    wait: bool = typer.Option(
        False, "--wait", help="Wait, with progress per document, and print a summary."
    ),
    job_size: int = typer.Option(
        32,
        "--job-size",
        min=1,
        help="Documents per job, at most the workers' max_documents_per_job (1000 by default); "
        "jobs are also split to fit max_job_bytes.",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Re-encode and rewrite every document (by default a worker skips documents whose "
        "text, metadata and profile are unchanged).",
    ),
    include: list[str] = typer.Option(
        [],
        "--include",
        metavar="GLOB",
        help="In a folder, read the files matching GLOB (repeat; default every file). A GLOB "
        "without '/' matches the file name, one with '/' the path inside the folder.",
    ),
    exclude: list[str] = typer.Option(
        [], "--exclude", metavar="GLOB", help="In a folder, leave out files matching GLOB (repeat)."
    ),
    hidden: bool = typer.Option(
        False, "--hidden", help="In a folder, read hidden files and folders too."
    ),
    as_json: bool = json_option(JSON_SHAPES),
    redis_url: str | None = setting_option("redis_url"),
    timeout_s: float | None = timeout_option(
        "With --wait: give up after this many seconds (exit 3; the jobs stay queued)."
    ),
    priority: str = typer.Option(
        "auto",
        "--priority",
        metavar="auto|interactive|bulk",
        help="Interactive jobs start ahead of every bulk job; auto: interactive when the input "
        "makes one job, else bulk.",
    ),
    redis_outage_limit_s: float | None = setting_option("redis_outage_limit_s", metavar="SECONDS"),
    max_file_bytes: int | None = typer.Option(
        None,
        "--max-file-bytes",
        min=1,
        help="Refuse files over this many bytes, named, before anything is sent (default: the "
        "workers' limit, 33554432 = 32 MiB).",
    ),
) -> None:
    """Enqueue documents for ingestion (and optionally wait for them)."""
    uri = input_path if is_uri(input_path) else None
    args = Args(
        Path(input_path), collection, wait, job_size, redis_url, timeout_s, force,
        tuple(include), tuple(exclude), hidden, as_json, priority=priority,
        redis_outage_limit_s=redis_outage_limit_s, max_file_bytes=max_file_bytes,
        uri=uri, urls=urls,
    )  # fmt: skip
    raise typer.Exit(run_enqueue(args))
