"""The ``poolq enqueue`` and ``poolq status`` commands."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ingest.client import JobOutcome, PoolqClient
from ingest.sources import open_source
from worker.settings import Settings


def _redis_url(flag: str | None) -> str:
    return flag or os.environ.get("POOLQ_REDIS_URL") or Settings().redis_url


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
                input_path, collection, wait, job_size, _redis_url(redis_url), timeout_s
            )
        )
    except (FileNotFoundError, ValueError, TimeoutError, ConnectionError, OSError) as exc:
        print(f"poolq enqueue: error: {exc}", file=sys.stderr)
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
        async with PoolqClient(_redis_url(redis_url)) as client:
            return await client.status(job_ids)

    try:
        st = asyncio.run(go())
    except (ConnectionError, OSError) as exc:
        print(f"poolq status: error: {exc}", file=sys.stderr)
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
