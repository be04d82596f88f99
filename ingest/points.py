"""A document's chunks and vectors as Qdrant points: deterministic ids and the payload schema
(``doc_id``, ``chunk_index``, ``chunk_count``, ``text``, character span, hashes of the chunk, the
text and the metadata, the document's metadata, the model behind each vector, the profile version
that encoded it, the ingestion time). Reindexing compares the hashes and the profile version."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from poolq.ingest.chunking import Chunk
from poolq.ingest.documents import Document
from poolq.sinks.points import PointRecord, VectorValue, point_id


def document_points(
    doc: Document,
    chunks: Sequence[Chunk],
    vectors: Sequence[dict[str, VectorValue]],
    *,
    models: Mapping[str, str],
    ingested_at: str,
    profile_version: str | None = None,
) -> list[PointRecord]:
    return [
        PointRecord(
            point_id(doc.id, chunk.index),
            vec,
            {
                "doc_id": doc.id,
                "chunk_index": chunk.index,
                "chunk_count": len(chunks),
                "text": chunk.text,
                "char_start": chunk.start,
                "char_end": chunk.end,
                "chunk_hash": chunk.content_hash,
                "doc_hash": doc.content_hash,
                "meta_hash": doc.metadata_hash,
                "metadata": doc.metadata,
                "models": dict(models),
                "profile_version": profile_version,
                "ingested_at": ingested_at,
            },
        )
        for chunk, vec in zip(chunks, vectors, strict=True)
    ]
