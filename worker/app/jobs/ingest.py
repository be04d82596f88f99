"""The ingest job: thin — check arguments, hand the work to the pipeline, report.

``ingest(ctx, collection, documents)`` returns only once the points are durable in Qdrant:
``{"points": n, "documents": n, "errors": [{"id": ..., "field": ..., "error": ...}]}``. One bad
document never fails the others.
"""

from __future__ import annotations

import time
from typing import Any

from poolq.ingest.documents import validate_documents
from poolq.worker.runtime.pipeline import ingest_documents
from poolq.worker.runtime.runtime import Runtime


def _runtime(ctx: dict[str, Any]) -> Runtime:
    return ctx["runtime"]


async def ingest(ctx: dict[str, Any], collection: str, documents: list[Any]) -> dict[str, Any]:
    rt = _runtime(ctx)
    job_id = str(ctx.get("job_id", "local"))
    t0 = time.perf_counter()
    if not isinstance(collection, str) or not collection:
        raise ValueError(f"collection: expected a non-empty string, got {collection!r}")
    if not isinstance(documents, list):
        raise ValueError(f"documents: expected a list, got {type(documents).__name__}")
    limit = rt.settings.max_documents_per_job
    if len(documents) > limit:
        raise ValueError(
            f"documents: {len(documents)} in one job exceeds the limit of {limit}; split the job"
        )
    docs, errors = validate_documents(documents, max_bytes=rt.settings.max_document_bytes)
    await rt.ensure_collection(collection)
    outcome = await ingest_documents(rt, collection, docs, group=job_id)
    rt.jobs_done += 1
    return {
        "points": outcome.points,
        "documents": outcome.documents,
        "errors": [e.as_dict() for e in errors + outcome.errors],
        "seconds": round(time.perf_counter() - t0, 3),
    }
