"""What a collection holds per document (one record per document, from its first chunk): the
content hashes and profile version that incremental reindexing compares with the source."""

from __future__ import annotations

from dataclasses import dataclass

from poolq.sinks.payload import (
    CHUNK_COUNT,
    DOC_HASH,
    DOC_ID,
    META_HASH,
    PROFILE_VERSION,
)
from poolq.sinks.qdrant_filters import first_chunks_filter
from poolq.sinks.store.base import Store

INVENTORY_FIELDS = [DOC_ID, DOC_HASH, META_HASH, PROFILE_VERSION, CHUNK_COUNT]


@dataclass(frozen=True)
class StoredDocument:
    doc_id: str
    doc_hash: str | None
    meta_hash: str | None
    profile_version: str | None
    chunk_count: int


def document_inventory(
    store: Store, collection: str, page_size: int = 1024
) -> dict[str, StoredDocument]:
    """Every document of ``collection`` (an alias is fine), read from its chunk 0."""
    first_chunks = first_chunks_filter()
    out: dict[str, StoredDocument] = {}
    offset = None
    while True:
        points, offset = store.scroll(
            collection,
            flt=first_chunks,
            limit=page_size,
            offset=offset,
            with_payload=INVENTORY_FIELDS,
            with_vectors=False,
        )
        for p in points:
            pl = p.payload or {}
            doc_id = pl.get(DOC_ID)
            if not isinstance(doc_id, str):
                continue
            count = pl.get(CHUNK_COUNT)
            out[doc_id] = StoredDocument(
                doc_id,
                pl.get(DOC_HASH),
                pl.get(META_HASH),
                pl.get(PROFILE_VERSION),
                count if isinstance(count, int) and count > 0 else 1,
            )
        if offset is None:
            return out
