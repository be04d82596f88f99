"""Job coroutines: thin — validate, chunk, encode through the shared engines, write, report.

``ingest(ctx, collection, documents)`` returns only once the points are durable in Qdrant:
``{"points": n, "documents": n, "errors": [{"id": ..., "field": ..., "error": ...}]}``. One bad
document never fails the others.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from ingest.documents import DocumentError, validate_documents
from ingest.points import document_points
from sinks.points import PointRecord
from worker.runtime import Runtime


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
    # chunking tokenizes: off the event loop (the Rust tokenizer releases the GIL)
    chunked = await asyncio.to_thread(lambda: [rt.vectorizer.chunk(d.text) for d in docs])
    texts = [c.text for chunks in chunked for c in chunks]
    ids = [f"{d.id}#{c.index}" for d, chunks in zip(docs, chunked, strict=True) for c in chunks]
    # a job is one turn: jobs finish in order, so each one's write overlaps later jobs' forwards
    encoded = await rt.vectorizer.encode(texts, ids, group=job_id, whole_turn=True)

    now = datetime.now(UTC).isoformat()
    models = rt.vectorizer.model_ids()
    points: list[PointRecord] = []
    replace_docs: dict[str, int] = {}
    k = 0
    for doc, chunks in zip(docs, chunked, strict=True):
        vectors = encoded[k : k + len(chunks)]
        k += len(chunks)
        failed = next((v for v in vectors if isinstance(v, Exception)), None)
        if failed is not None:
            errors.append(DocumentError(doc.id, "text", f"could not be encoded: {failed}"))
            continue
        replace_docs[doc.id] = len(chunks)
        ok = [v for v in vectors if not isinstance(v, Exception)]
        points += document_points(doc, chunks, ok, models=models, ingested_at=now)
    written = await rt.writer.write(collection, points, replace_docs=replace_docs)
    rt.jobs_done += 1
    return {
        "points": written,
        "documents": len(replace_docs),
        "errors": [e.as_dict() for e in errors],
        "seconds": round(time.perf_counter() - t0, 3),
    }
