"""``poolq status``: job counts, results of given jobs, reindex progress, worker heartbeats."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import typer

from poolq.ingest.client import PoolqClient
from poolq.worker.cli.app import app
from poolq.worker.cli.options import (
    CLIENT_ERRORS,
    error,
    json_option,
    redis_url_option,
    resolve_redis_url,
)


def format_reindex(r: dict[str, Any]) -> str:
    kind = "full rebuild" if r.get("full") else "incremental"
    line = f"{r.get('collection')!r} from {r.get('source')} ({kind}): {r.get('state')}"
    counts = ", ".join(
        f"{r[k]} {k.replace('_', ' ')}"
        for k in ("new", "changed", "stale", "metadata_only", "unchanged", "removed")
        if k in r
    )
    if counts:
        line += f"; {counts}"
    if r.get("to_encode"):
        line += f"; encoded {r.get('done', 0)}/{r['to_encode']}"
    if r.get("error"):
        line += f"; error: {r['error']}"
    if r.get("updated_at"):
        line += f" ({time.time() - r['updated_at']:.0f}s ago)"
    return line


def run_status(job_ids: list[str], redis_url: str | None, as_json: bool) -> int:
    async def go() -> dict[str, Any]:
        async with PoolqClient(resolve_redis_url(redis_url)) as client:
            return await client.status(job_ids)

    try:
        st = asyncio.run(go())
    except CLIENT_ERRORS as exc:
        error("status", exc)
        return 2
    jobs = [o.__dict__ for o in st["jobs"]]
    if as_json:
        print(
            json.dumps(
                {
                    "counts": st["counts"],
                    "jobs": jobs if job_ids else [],
                    "workers": st["workers"],
                    "reindex": st["reindex"],
                }
            )
        )
        return 0
    c = st["counts"]
    print(
        f"jobs: {c['queued']} queued, {c['running']} running, {c['done']} done, {c['failed']} failed"
    )
    for o in jobs if job_ids else []:
        detail = json.dumps(o["result"]) if o["result"] is not None else (o["error"] or "")
        print(f"  {o['job_id']}  {o['status']:9s} {detail}")
    for r in st["reindex"]:
        print(f"reindex {format_reindex(r)}")
    for w in st["workers"]:
        engines = ", ".join(
            f"{Path(str(m)).name}: {e['batches']} batches, {e['mean_batch_tokens']} tokens/batch"
            for m, e in w.get("engines", {}).items()
        )
        state = "stopped" if w.get("stopped") else f"seen {time.time() - w['seen_at']:.0f}s ago"
        print(
            f"worker {w['worker_id']} ({state}): {w['jobs_done']} jobs, {w['points_written']} points; {engines}"
        )
    return 0


@app.command()
def status(
    job_ids: list[str] = typer.Argument(
        None, metavar="[JOB_ID...]", help="Jobs to report (default: all known)."
    ),
    redis_url: str | None = redis_url_option(),
    as_json: bool = json_option(
        'one object: {"counts": {...}, "jobs": [...], "workers": [...], "reindex": [...]}.'
    ),
) -> None:
    """Queued, running, done and failed job counts; results of the given jobs; worker heartbeats."""
    raise typer.Exit(run_status(job_ids or [], redis_url, as_json))
