"""``poolq enqueue``: documents from a JSONL file or a folder, as ingestion jobs."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import typer
from tqdm import tqdm

from poolq.ingest.client import JobOutcome, PoolqClient
from poolq.ingest.sources import open_source
from poolq.worker.cli.app import app
from poolq.worker.cli.options import (
    CLIENT_ERRORS,
    error,
    redis_url_option,
    resolve_redis_url,
    timeout_option,
)


def summarize(outcomes: list[JobOutcome], seconds: float) -> dict[str, Any]:
    docs = sum(o.result.get("documents", 0) for o in outcomes if o.result)
    points = sum(o.result.get("points", 0) for o in outcomes if o.result)
    errors = [e for o in outcomes if o.result for e in o.result.get("errors", [])]
    failed = [o for o in outcomes if o.status == "failed"]
    return {
        "jobs": len(outcomes),
        "failed_jobs": len(failed),
        "documents": docs,
        "points": points,
        "errors": errors,
        "job_errors": [{"job_id": o.job_id, "error": o.error} for o in failed],
        "seconds": round(seconds, 2),
        "documents_per_s": round(docs / seconds, 1) if seconds > 0 else 0.0,
    }


async def enqueue_and_wait(
    input_path: Path, collection: str, wait: bool, job_size: int, redis_url: str, timeout_s: float | None,
    progress: bool = True,
) -> tuple[list[str], dict[str, Any] | None, list[str]]:  # fmt: skip
    source = open_source(input_path)
    docs = list(source.documents())
    t0 = time.perf_counter()
    async with PoolqClient(redis_url) as client:
        job_ids = await client.enqueue(collection, docs, job_size=job_size)
        if not wait:
            return job_ids, None, source.errors
        bar = tqdm(
            total=len(docs), unit="doc", file=sys.stderr, disable=not progress, desc="ingesting"
        )
        sizes = {j: min(job_size, len(docs) - i * job_size) for i, j in enumerate(job_ids)}

        def tick(o: JobOutcome) -> None:
            bar.update(sizes.get(o.job_id, 0))

        outcomes = await client.wait(job_ids, timeout_s=timeout_s, progress=tick)
        bar.close()
    return job_ids, summarize(outcomes, time.perf_counter() - t0), source.errors


def run_enqueue(
    input_path: Path,
    collection: str,
    wait: bool,
    job_size: int,
    redis_url: str | None,
    timeout_s: float | None,
) -> int:
    try:
        job_ids, summary, source_errors = asyncio.run(
            enqueue_and_wait(
                input_path, collection, wait, job_size, resolve_redis_url(redis_url), timeout_s
            )
        )
    except CLIENT_ERRORS as exc:  # FileNotFoundError, TimeoutError: OSErrors
        error("enqueue", exc)
        return 2
    for e in source_errors:
        print(f"poolq enqueue: skipped {e}", file=sys.stderr)
    if summary is None:
        print(json.dumps({"jobs": job_ids}))
        return 1 if source_errors else 0
    for e in summary["errors"]:
        print(f"poolq enqueue: document {e['id']!r}: {e['error']}", file=sys.stderr)
    for e in summary["job_errors"]:
        print(f"poolq enqueue: job {e['job_id']} failed: {e['error']}", file=sys.stderr)
    print(
        f"{summary['documents']} documents, {summary['points']} points, {len(summary['errors'])} errors, "
        f"{summary['failed_jobs']} failed jobs in {summary['seconds']}s ({summary['documents_per_s']} documents/s)"
    )
    return 1 if (summary["errors"] or summary["failed_jobs"] or source_errors) else 0


@app.command()
def enqueue(
    input_path: Path = typer.Argument(
        ..., metavar="INPUT", help="A JSONL file or a folder of .txt/.md files."
    ),
    collection: str = typer.Option(..., "--collection", help="Qdrant collection to write."),
    wait: bool = typer.Option(False, "--wait", help="Wait for the jobs and print a summary."),
    job_size: int = typer.Option(32, "--job-size", min=1, help="Documents per job."),
    redis_url: str | None = redis_url_option(),
    timeout_s: float | None = timeout_option(),
) -> None:
    """Enqueue documents for ingestion (and optionally wait for them)."""
    raise typer.Exit(run_enqueue(input_path, collection, wait, job_size, redis_url, timeout_s))
