"""``poolq reindex``: enqueue one reindex now (a worker runs it) and, with ``--wait``, follow it
with progress and print its summary."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tqdm import tqdm

from poolq.ingest.cli.command_env import CLIENT_ERRORS, error, resolve_redis_url
from poolq.ingest.client import PoolqClient
from poolq.wire.connection import redact_text
from poolq.wire.records.outcome import JobResult
from poolq.wire.records.reindex import ReindexProgress, ReindexSkipped, ReindexSummary
from poolq.wire.uris import UriError, is_uri, parse_uri


async def _run(
    source: str, collection: str, full: bool, keep_old: bool, wait: bool, redis_url: str,
    timeout_s: float | None,
) -> tuple[str, JobResult | None, str | None]:  # fmt: skip
    async with PoolqClient(redis_url) as client:
        job_id = await client.reindex(source, collection, full=full, keep_old=keep_old)
        if not wait:
            return job_id, None, None
        bar = tqdm(total=0, unit="doc", file=sys.stderr, desc="reindexing")
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        while True:
            done = await client.finished([job_id])
            records = await client.reindex_progress(collection)
            rec = records[0] if records and records[0].job_id == job_id else None
            if rec is not None and (rec.to_encode or rec.listed):
                bar.total = rec.to_encode
                bar.n = rec.done
                bar.set_postfix_str(rec.state + sync_counts(rec))
                bar.refresh()
            if job_id in done:
                bar.close()
                o = done[job_id]
                return job_id, o.result, o.error
            if deadline is not None and loop.time() > deadline:
                bar.close()
                raise TimeoutError(f"reindex job {job_id} not finished after {timeout_s}s")
            await asyncio.sleep(0.25)


def sync_counts(rec: ReindexProgress) -> str:
    """A store's sync so far: listed, fetched, parsed, encoded and deleted."""
    if not rec.listed:
        return ""
    return (
        f" listed {rec.listed}, fetched {rec.fetched}, parsed {rec.parsed}, encoded {rec.done}, "
        f"deleted {rec.removed or 0}"
    )


def run_reindex(
    source: Path | str,
    collection: str,
    full: bool,
    keep_old: bool,
    wait: bool,
    redis_url: str | None,
    timeout_s: float | None,
) -> int:
    """What ``poolq reindex`` does; returns its exit status (0 done, 1 the job failed, was
    skipped or had document errors, 2 nothing could be enqueued or followed)."""
    if isinstance(source, str) and is_uri(source):
        try:
            uri = parse_uri(source)
            if not uri.is_object_store:
                raise UriError(
                    f"{source!r}: a sync reads a bucket's prefix (s3://, gs://, az://); give a "
                    "folder or a JSONL file as a path"
                )
            if not uri.is_prefix:
                raise UriError(f"{source!r}: a sync reads a prefix; end it with '/'")
        except UriError as bad:
            error("reindex", f"--source: {bad}")
            return 2
        where = source  # the worker lists and fetches it
    else:
        source = Path(source)
        if not source.exists():
            error("reindex", f"source {str(source)!r} does not exist")
            return 2
        where = str(source.resolve())
    try:
        url = resolve_redis_url(redis_url)
        job_id, result, job_error = asyncio.run(
            _run(where, collection, full, keep_old, wait, url, timeout_s)
        )
    except CLIENT_ERRORS as exc:
        error("reindex", exc)
        return 2
    if not wait:
        print(json.dumps({"job": job_id}))
        return 0
    if job_error is not None:
        print(f"poolq reindex: job {job_id} failed: {redact_text(job_error)}", file=sys.stderr)
        return 1
    if not isinstance(result, ReindexSummary | ReindexSkipped):
        got = "nothing" if result is None else result.wire_name
        error("reindex", f"job {job_id} returned no reindex summary (got {got})")
        return 1
    if isinstance(result, ReindexSkipped):
        print(f"poolq reindex: {result.skipped}", file=sys.stderr)
        return 1
    for e in result.errors:
        print(f"poolq reindex: document {e.id!r}: {e.error}", file=sys.stderr)
    print(summary_line(result))
    return 1 if result.errors else 0


def summary_line(r: ReindexSummary) -> str:
    """A finished reindex as the one line ``poolq reindex --wait`` prints."""
    kind = "full rebuild" if r.full else "incremental"
    parts = [f"{n} {k.replace('_', ' ')}" for k, n in r.counts().items()]
    line = (
        f"{kind} of {r.collection!r}: {r.documents} documents ({', '.join(parts)}); "
        f"{r.encoded_chunks} chunks encoded, {r.points_written} points written, "
        f"{len(r.errors)} errors in {r.seconds}s"
    )
    if r.switched_from is not None or r.full:
        line += f"; alias {r.collection!r} -> {r.target!r}"
        if r.dropped:
            line += f", dropped {r.dropped!r}"
    if r.listed is not None:  # a bucket's prefix
        line += f"; {r.listed} objects listed, {r.fetched} fetched"
    return line
