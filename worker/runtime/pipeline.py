"""A batch of documents through the worker: chunk, encode (shared engines), write.

Both jobs use it: ``ingest`` for the documents a client sent, ``reindex`` for the new and changed
documents of a source. One bad document never fails the others: it comes back as an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from poolq.ingest.documents import Document, DocumentError
from poolq.ingest.points import document_points
from poolq.sinks.points import PointRecord
from poolq.worker.runtime.runtime import Runtime


@dataclass
class BatchOutcome:
    points: int = 0
    documents: int = 0
    chunks: int = 0  # chunks sent to the engines (each to every model of the profile)
    errors: list[DocumentError] = field(default_factory=list)


async def ingest_documents(
    rt: Runtime,
    collection: str,
    docs: Sequence[Document],
    *,
    group: str,
    whole_turn: bool = True,
) -> BatchOutcome:
    """Chunk, encode and write ``docs`` (already validated) into ``collection``; returns once
    the points are durable. Stale chunks of documents that shrank are deleted."""
    out = BatchOutcome()
    if not docs:
        return out
    # chunking tokenizes: off the event loop (the Rust tokenizer releases the GIL)
    chunked = await asyncio.to_thread(lambda: [rt.vectorizer.chunk(d.text) for d in docs])
    texts = [c.text for chunks in chunked for c in chunks]
    ids = [f"{d.id}#{c.index}" for d, chunks in zip(docs, chunked, strict=True) for c in chunks]
    # a job is one turn: jobs finish in order, so each one's write overlaps later jobs' forwards
    encoded = await rt.vectorizer.encode(texts, ids, group=group, whole_turn=whole_turn)
    out.chunks = len(texts)

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
            out.errors.append(DocumentError(doc.id, "text", f"could not be encoded: {failed}"))
            continue
        replace_docs[doc.id] = len(chunks)
        ok = [v for v in vectors if not isinstance(v, Exception)]
        points += document_points(
            doc,
            chunks,
            ok,
            models=models,
            ingested_at=now,
            profile_version=rt.vectorizer.version,
        )
    out.points = await rt.writer.write(collection, points, replace_docs=replace_docs)
    out.documents = len(replace_docs)
    return out
