"""A batch of documents through the worker: chunk, encode (shared engines), write.

Both jobs use it: ``ingest`` for the documents a client sent, ``reindex`` for the new and changed
documents of a source. One bad document never fails the others: it comes back as an error.

The documents are cut into parts of about one write batch of chunks, all sent to the engines at
once (the same group and turn: batching is as for one call), and each part is written as soon as
its chunks are encoded, so documents finish (and a job's progress moves) while later parts are
still being encoded. Every write records its metadata fields (``collection_fields.py``).

Each part's write is a batch boundary: a job whose cancel flag is set (``wire/cancel.py``)
stops there with :class:`~poolq.wire.cancel.JobCancelledError`; the parts written before it
stay written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from poolq.sinks.points import PointRecord
from poolq.wire.cancel import JobCancelledError
from poolq.wire.documents import Document, DocumentError
from poolq.wire.records.codes import error_code
from poolq.worker.chunks.chunking import Chunk
from poolq.worker.chunks.context import Encodings, encoder_inputs
from poolq.worker.chunks.points import document_points
from poolq.worker.chunks.sections import chunk_documents
from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.runtime.collection_fields import metadata_fields, record_fields
from poolq.worker.runtime.job_progress import JobProgress
from poolq.worker.runtime.vectorizer import Encoded
from poolq.worker.runtime.worker_runtime import Runtime

log = logging.getLogger("poolq.jobs")

# A job this small is hashed, and its metadata fields listed, on the event loop: ~0.1-0.2 ms of
# work for 32 documents of ~400 characters, about what a hop to a thread and back costs. Its
# metadata was walked there already, by validation (``wire/documents.py``), which costs more
# than either. Larger jobs (up to 64 MiB of text) still go to a thread.
INLINE_MAX_DOCS = 64
INLINE_MAX_CHARS = 1 << 16


def inline_ok(docs: Sequence[Document]) -> bool:
    """Whether ``docs`` are few and short enough for their hashing and metadata walk to run
    on the event loop (see ``INLINE_MAX_*``)."""
    return len(docs) <= INLINE_MAX_DOCS and sum(len(d.text) for d in docs) <= INLINE_MAX_CHARS


@dataclass
class BatchOutcome:
    points: int = 0
    documents: int = 0
    chunks: int = 0  # chunks sent to the engines (each to every model of the profile)
    errors: list[DocumentError] = field(default_factory=list)


def split_parts(chunked: Sequence[list[Chunk]], target_chunks: int) -> list[tuple[int, int]]:
    """``[start, end)`` document ranges of about ``target_chunks`` chunks each (a document is
    never split)."""
    parts: list[tuple[int, int]] = []
    start = n = 0
    for i, chunks in enumerate(chunked):
        n += len(chunks)
        if n >= target_chunks:
            parts.append((start, i + 1))
            start, n = i + 1, 0
    if start < len(chunked):
        parts.append((start, len(chunked)))
    return parts


async def ingest_documents(
    rt: Runtime,
    collection: str,
    docs: Sequence[Document],
    *,
    group: str,
    lane: Lane = Lane.BULK,
    progress: JobProgress | None = None,
    on_queued: Callable[[str], None] | None = None,
) -> BatchOutcome:
    """Chunk, encode and write ``docs`` (already validated) into ``collection``; returns once
    the points are durable. Stale chunks of documents that shrank are deleted. ``group`` and
    ``lane`` place the chunks in the engines' queues (``lanes.py``); ``on_queued(group)`` is
    called once every chunk is queued in the engines (admission counts them from there)."""
    out = BatchOutcome()
    if not docs:
        if on_queued is not None:
            on_queued(group)
        return out
    # chunking tokenizes: off the event loop (the Rust tokenizer releases the GIL)
    # (a parsed document section by section: chunks/sections.py; what the models read of each
    # chunk, a parsed file's with its title and headings, and its tokens: chunks/context.py)
    t0 = time.perf_counter()
    chunked, inputs = await asyncio.to_thread(_chunk, rt, docs)
    out.chunks = sum(len(c) for c in chunked)
    parts = split_parts(chunked, max(1, rt.writer.batch_points))
    if progress is not None:
        progress.add(chunks=out.chunks, chunk_ms=_ms_since(t0))
        if len(parts) > 1:  # one part: its write publishes the count (one round trip less)
            await progress.publish()
    now = datetime.now(UTC).isoformat()

    async def one_part(start: int, end: int) -> None:
        part_docs, part_chunks = docs[start:end], chunked[start:end]
        texts = [text for doc in inputs[start:end] for text, _ in doc]
        encodings = [tokens for doc in inputs[start:end] for _, tokens in doc]
        ids = [
            f"{d.id}#{c.index}" for d, cs in zip(part_docs, part_chunks, strict=True) for c in cs
        ]
        # every part of the job is queued at once; jobs share the engines by tokens
        t_encode = time.perf_counter()
        encoded = await rt.vectorizer.encode(
            texts, ids, group=group, lane=lane, on_queued=part_queued, encodings=encodings
        )
        points, replace_docs, errors = _points(rt, part_docs, part_chunks, encoded, now)
        out.errors += errors
        if progress is not None:
            progress.add(errors=len(errors), done=len(errors), encode_ms=_ms_since(t_encode))
            if await progress.cancel_requested():  # the batch boundary (module docstring)
                raise JobCancelledError(
                    f"cancelled after {out.documents} of {len(docs)} documents were written"
                )
        t_write = time.perf_counter()
        written = await rt.writer.write(collection, points, replace_docs=replace_docs)
        out.points += written
        out.documents += len(replace_docs)
        if progress is not None:
            progress.add(points=written, done=len(replace_docs), write_ms=_ms_since(t_write))
            await progress.publish()

    waiting = len(parts)

    def part_queued() -> None:
        nonlocal waiting
        waiting -= 1
        if waiting == 0 and on_queued is not None:
            on_queued(group)

    tasks = [asyncio.ensure_future(one_part(s, e)) for s, e in parts]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    await _record_fields(rt, collection, docs)
    return out


def _chunk(
    rt: Runtime, docs: Sequence[Document]
) -> tuple[list[list[Chunk]], list[list[tuple[str, Encodings | None]]]]:
    """Each document's chunks, and each chunk's text and tokens as the models read them."""
    v = rt.vectorizer
    chunked = chunk_documents(v.chunk_many, docs, v.chunk_parsed_many)
    return chunked, encoder_inputs(docs, chunked, v.chunker.counters)


def _ms_since(t0: float) -> int:
    return round((time.perf_counter() - t0) * 1000)


def _points(
    rt: Runtime,
    docs: Sequence[Document],
    chunked: Sequence[list[Chunk]],
    encoded: Sequence[object],
    now: str,
) -> tuple[list[PointRecord], dict[str, int], list[DocumentError]]:
    models = rt.vectorizer.model_ids()
    points: list[PointRecord] = []
    replace_docs: dict[str, int] = {}
    errors: list[DocumentError] = []
    k = 0
    for doc, chunks in zip(docs, chunked, strict=True):
        vectors = encoded[k : k + len(chunks)]
        k += len(chunks)
        failed = next((v for v in vectors if isinstance(v, Exception)), None)
        if failed is not None:
            message = f"could not be encoded: {failed}"
            errors.append(DocumentError(doc.id, "text", message, error_code(failed)))
            continue
        replace_docs[doc.id] = len(chunks)
        done = [v for v in vectors if isinstance(v, Encoded)]
        points += document_points(
            doc,
            chunks,
            [v.vectors for v in done],
            models=models,
            ingested_at=now,
            profile_version=rt.vectorizer.version,
            labels=[v.labels for v in done] if rt.vectorizer.label_readers else None,
        )
    return points, replace_docs, errors


async def _record_fields(rt: Runtime, collection: str, docs: Sequence[Document]) -> None:
    """Add the documents' metadata keys and types to the collection's field registry (best
    effort: a search asks the store about a field the registry lacks)."""
    if rt.redis is None or not any(d.metadata for d in docs):
        return
    metadatas = [d.metadata for d in docs]
    if inline_ok(docs):
        fields = metadata_fields(metadatas)
    else:
        fields = await asyncio.to_thread(metadata_fields, metadatas)
    if not rt.recent_fields.new_in(collection, fields):
        return  # recorded by an earlier job lately (collection_fields.RecentFields)
    with contextlib.suppress(Exception):
        await record_fields(rt.redis, collection, fields)
        rt.recent_fields.recorded(collection, fields)
