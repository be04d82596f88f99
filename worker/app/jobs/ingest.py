"""The ingest job: thin — check arguments, leave unchanged documents alone, hand the rest to the
pipeline, report.

``ingest(ctx, collection, documents, force=False, priority="bulk")`` returns once the points are
durable in Qdrant: ``{"points": n, "documents": n, "errors": [{"id": ..., "field": ..., "error": ...}],
"skipped": n, "seconds": s}``. One bad document never fails the others. A document whose stored
``doc_hash``, ``meta_hash`` and ``profile_version`` all match (read for every document of the
job in one lookup by id) is ``skipped``: no model work, no write; ``force=True`` re-encodes
every document. Progress is published under ``JOB_PROGRESS_KEY`` while the job runs.

A retry of the job (its worker died, or a try failed) finds the documents an earlier try wrote
already stored: those written since the job was enqueued (their chunk 0's ``ingested_at`` at or
after arq's ``enqueue_time``, on a try after the first) are not written again either, but they
count as written (``documents``, and their chunks in ``points``), not as ``skipped``: the job's
result tells what the job wrote, whichever of its tries did. (The clocks of clients and workers
are assumed to agree; an unchanged document another job wrote after this one was enqueued counts
as written here too.)

``priority`` ("interactive" or "bulk", from the client) is the lane of the job's chunks in the
engines (``worker/engine/batching/lanes.py``).
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from functools import partial
from typing import Any

from poolq.sinks.inventory import StoredDocument, stored_documents
from poolq.wire.documents import Document, validate_documents
from poolq.wire.records.job_args import IngestArgs
from poolq.wire.records.results import IngestResult
from poolq.worker.engine.batching.lanes import lane_of_priority
from poolq.worker.runtime.job_progress import JobProgress
from poolq.worker.runtime.pipeline import ingest_documents, inline_ok
from poolq.worker.runtime.worker_runtime import Runtime


async def ingest(
    ctx: dict[str, Any],
    collection: str,
    documents: list[Any],
    force: bool = False,
    priority: str = "bulk",
) -> dict[str, Any]:
    rt: Runtime = ctx["runtime"]
    job_id = str(ctx.get("job_id", "local"))
    t0 = time.perf_counter()
    args = IngestArgs.checked(collection, documents, force, priority)
    limit = rt.settings.max_documents_per_job
    if len(documents) > limit:
        raise ValueError(
            f"documents: {len(documents)} in one job exceeds the limit of {limit}; split the job"
        )
    docs, errors = validate_documents(documents, max_bytes=rt.settings.max_document_bytes)
    progress = JobProgress(
        ctx.get("redis"),
        job_id,
        documents=len(documents),
        clock=ctx.get("job_clock"),
        board=ctx.get("progress_board"),
    )
    progress.add(errors=len(errors), done=len(errors))
    async with progress:
        await rt.ensure_collection(args.collection)
        todo, earlier = (docs, {}) if args.force else await _changed(rt, args.collection, docs, ctx)
        skipped = len(docs) - len(todo) - len(earlier)
        earlier_points = sum(earlier.values())
        progress.add(skipped=skipped, done=skipped + len(earlier), points=earlier_points)
        await progress.publish()
        outcome = await ingest_documents(
            rt,
            args.collection,
            todo,
            group=job_id,
            lane=lane_of_priority(args.priority),
            progress=progress,
            on_queued=rt.admission.queued if rt.admission is not None else None,
        )
    rt.jobs_done += 1
    rt.documents_done += outcome.documents
    rt.chunks_done += outcome.points
    return IngestResult(
        points=outcome.points + earlier_points,
        documents=outcome.documents + len(earlier),
        errors=[e.as_record() for e in errors + outcome.errors],
        skipped=skipped,
        seconds=round(time.perf_counter() - t0, 3),
    ).to_wire()


async def _changed(
    rt: Runtime, collection: str, docs: list[Document], ctx: dict[str, Any]
) -> tuple[list[Document], dict[str, int]]:
    """The documents the collection does not already hold as they are (text, metadata and the
    profile that encoded them); and among those it holds, the ones an earlier try of this job
    wrote (doc id -> chunk count; see the module docstring)."""
    if not docs:
        return [], {}
    # hashing every text (up to a job's 64 MiB): off the event loop unless the job is small
    # (pipeline.inline_ok); Document caches them
    if inline_ok(docs):
        _hash(docs)
    else:
        await asyncio.to_thread(_hash, docs)
    stored = await rt.writer.read(
        partial(stored_documents, collection=collection, doc_ids=[d.id for d in docs]),
        what=f"lookup of {len(docs)} documents in {collection!r}",
    )
    version = rt.vectorizer.version
    todo = [d for d in docs if not _unchanged(d, stored.get(d.id), version)]
    since = _earlier_tries_since(ctx)
    earlier = {
        d.id: s.chunk_count
        for d in docs
        if since is not None
        and (s := stored.get(d.id)) is not None
        and _unchanged(d, s, version)
        and _written_since(s, since)
    }
    return todo, earlier


def _hash(docs: list[Document]) -> None:
    for d in docs:
        d.content_hash, d.metadata_hash  # noqa: B018 (cached properties: computed here)


def _earlier_tries_since(ctx: dict[str, Any]) -> datetime | None:
    """When the job was enqueued, on a try after the first (None on the first try: no earlier
    try wrote anything)."""
    enqueued = ctx.get("enqueue_time")
    if int(ctx.get("job_try") or 1) <= 1 or not isinstance(enqueued, datetime):
        return None
    return enqueued


def _written_since(stored: StoredDocument, since: datetime) -> bool:
    try:
        written = datetime.fromisoformat(stored.ingested_at or "")
    except ValueError:
        return False
    if written.tzinfo is None or since.tzinfo is None:
        return False
    return written >= since


def _unchanged(doc: Document, stored: StoredDocument | None, version: str) -> bool:
    return (
        stored is not None
        and stored.doc_hash == doc.content_hash
        and stored.meta_hash == doc.metadata_hash
        and stored.profile_version == version
    )
