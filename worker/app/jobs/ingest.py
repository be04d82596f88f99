"""The ingest job: thin — check arguments, leave unchanged documents alone, hand the rest to the
pipeline, report.

``ingest(ctx, collection, documents, force=False, priority="bulk")`` returns only once the points are durable in
Qdrant: ``{"points": n, "documents": n, "errors": [{"id": ..., "field": ..., "error": ...}],
"skipped": n, "seconds": s}``. One bad document never fails the others. A document whose stored
``doc_hash``, ``meta_hash`` and ``profile_version`` all match (read for every document of the
job in one lookup by id) is ``skipped``: no model work, no write; ``force=True`` re-encodes
every document. Progress is published under ``JOB_PROGRESS_KEY`` while the job runs.
"""

from __future__ import annotations

import asyncio
import time
from functools import partial
from typing import Any

from poolq.ingest.documents import Document, validate_documents
from poolq.sinks.inventory import StoredDocument, stored_documents
from poolq.worker.engine.lanes import lane_of_priority
from poolq.worker.runtime.job_progress import JobProgress
from poolq.worker.runtime.pipeline import ingest_documents
from poolq.worker.runtime.runtime import Runtime
from poolq.worker.wire import constants


def _runtime(ctx: dict[str, Any]) -> Runtime:
    return ctx["runtime"]


async def ingest(
    ctx: dict[str, Any],
    collection: str,
    documents: list[Any],
    force: bool = False,
    priority: str = "bulk",
) -> dict[str, Any]:
    rt = _runtime(ctx)
    job_id = str(ctx.get("job_id", "local"))
    t0 = time.perf_counter()
    if not isinstance(collection, str) or not collection:
        raise ValueError(f"collection: expected a non-empty string, got {collection!r}")
    if not isinstance(documents, list):
        raise ValueError(f"documents: expected a list, got {type(documents).__name__}")
    if not isinstance(force, bool):
        raise ValueError(f"force: expected true or false, got {force!r}")
    if priority not in constants.PRIORITIES:
        raise ValueError(
            f"priority: expected one of {list(constants.PRIORITIES)}, got {priority!r}"
        )
    limit = rt.settings.max_documents_per_job
    if len(documents) > limit:
        raise ValueError(
            f"documents: {len(documents)} in one job exceeds the limit of {limit}; split the job"
        )
    docs, errors = validate_documents(documents, max_bytes=rt.settings.max_document_bytes)
    progress = JobProgress(
        ctx.get("redis"), job_id, documents=len(documents), clock=ctx.get("job_clock")
    )
    progress.add(errors=len(errors), done=len(errors))
    async with progress:
        await rt.ensure_collection(collection)
        todo = docs if force else await _changed(rt, collection, docs)
        skipped = len(docs) - len(todo)
        progress.add(skipped=skipped, done=skipped)
        await progress.publish()
        outcome = await ingest_documents(
            rt,
            collection,
            todo,
            group=job_id,
            lane=lane_of_priority(priority),
            progress=progress,
            on_queued=rt.admission.queued if rt.admission is not None else None,
        )
    rt.jobs_done += 1
    return {
        "points": outcome.points,
        "documents": outcome.documents,
        "errors": [e.as_dict() for e in errors + outcome.errors],
        "skipped": skipped,
        "seconds": round(time.perf_counter() - t0, 3),
    }


async def _changed(rt: Runtime, collection: str, docs: list[Document]) -> list[Document]:
    """The documents the collection does not already hold as they are (text, metadata and the
    profile that encoded them)."""
    if not docs:
        return []
    # hashing every text (up to a job's 64 MiB): off the event loop; Document caches them
    await asyncio.to_thread(lambda: [(d.content_hash, d.metadata_hash) for d in docs])
    stored = await rt.writer.read(
        partial(stored_documents, collection=collection, doc_ids=[d.id for d in docs]),
        what=f"lookup of {len(docs)} documents in {collection!r}",
    )
    version = rt.vectorizer.version
    return [d for d in docs if not _unchanged(d, stored.get(d.id), version)]


def _unchanged(doc: Document, stored: StoredDocument | None, version: str) -> bool:
    return (
        stored is not None
        and stored.doc_hash == doc.content_hash
        and stored.meta_hash == doc.metadata_hash
        and stored.profile_version == version
    )
