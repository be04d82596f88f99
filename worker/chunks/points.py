"""A document's chunks and vectors as Qdrant points: deterministic ids and the payload of
``wire/payload.py`` (the one owner of the field names). Reindexing compares the hashes and the
profile version the payload records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from poolq.sinks.points import PointRecord, VectorValue, point_id
from poolq.wire.documents import Document
from poolq.wire.payload import build_payload
from poolq.worker.chunks.chunking import Chunk


def document_points(
    doc: Document,
    chunks: Sequence[Chunk],
    vectors: Sequence[dict[str, VectorValue]],
    *,
    models: Mapping[str, str],
    ingested_at: str,
    profile_version: str | None = None,
    labels: Sequence[dict[str, Any]] | None = None,
) -> list[PointRecord]:
    """``labels``: per chunk, its payload's ``labels`` (None: the profile names no classifier)."""
    layout = doc.layout
    out = []
    for k, (chunk, vec) in enumerate(zip(chunks, vectors, strict=True)):
        cited: dict[str, Any] = {}
        if layout is not None:
            page_start, page_end = layout.page_range(chunk.start, chunk.end)
            cited = {
                "source": layout.source,
                "title": layout.title,
                "mime": layout.mime,
                "page_start": page_start,
                "page_end": page_end,
                "headings": layout.headings_at(chunk.start),
                "file_hash": layout.file_hash,
                "ocr": layout.ocr_in(chunk.start, chunk.end),
            }
        out.append(
            PointRecord(
                point_id(doc.id, chunk.index),
                vec,
                build_payload(
                    doc_id=doc.id,
                    chunk_index=chunk.index,
                    chunk_count=len(chunks),
                    text=chunk.text,
                    char_start=chunk.start,
                    char_end=chunk.end,
                    chunk_hash=chunk.content_hash,
                    doc_hash=doc.content_hash,
                    meta_hash=doc.metadata_hash,
                    metadata=doc.metadata,
                    models=models,
                    profile_version=profile_version,
                    ingested_at=ingested_at,
                    **cited,
                    labels=None if labels is None else labels[k],
                ),
            )
        )
    return out
