"""What a collection holds per document (one record per document, from its first chunk): the
content hashes, profile version and object tag that incremental reindexing compares with the
source, and that an ingest job compares with the documents it was sent
(:func:`stored_documents`). Reads only; also the names a search may use
(:func:`collection_names`) and whether any point holds a payload field (:func:`first_value`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qdrant_client import models

from poolq.sinks.points import point_id
from poolq.sinks.qdrant_filters import first_chunks_filter
from poolq.sinks.store.interface import Store
from poolq.wire.payload import (
    CHUNK_COUNT,
    DOC_HASH,
    DOC_ID,
    FILE_HASH,
    INGESTED_AT,
    META_HASH,
    METADATA,
    PROFILE_VERSION,
)

INVENTORY_FIELDS = [
    DOC_ID, DOC_HASH, META_HASH, PROFILE_VERSION, CHUNK_COUNT, INGESTED_AT, FILE_HASH,
]  # fmt: skip
TAG_FIELD = f"{METADATA}.tag"  # what a sync compares with a listing (worker/reindex/objects.py)


@dataclass(frozen=True)
class StoredDocument:
    doc_id: str
    doc_hash: str | None
    meta_hash: str | None
    profile_version: str | None
    chunk_count: int
    ingested_at: str | None = None  # of its chunk 0 (ISO 8601, UTC): when it was written
    file_hash: str | None = None  # of the file it was parsed from (bytes:parser version)
    # the object's version id or ETag it was fetched at (``metadata.tag``: a store's object)
    tag: str | None = None


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
            with_payload=[*INVENTORY_FIELDS, TAG_FIELD],
            with_vectors=False,
        )
        for p in points:
            if (stored := _stored(p.payload)) is not None:
                out[stored.doc_id] = stored
        if offset is None:
            return out


def _stored(payload: dict[str, Any] | None) -> StoredDocument | None:
    pl = payload or {}
    doc_id = pl.get(DOC_ID)
    if not isinstance(doc_id, str):
        return None
    count = pl.get(CHUNK_COUNT)
    metadata = pl.get(METADATA)
    return StoredDocument(
        doc_id,
        pl.get(DOC_HASH),
        pl.get(META_HASH),
        pl.get(PROFILE_VERSION),
        count if isinstance(count, int) and count > 0 else 1,
        _text_or_none(pl.get(INGESTED_AT)),
        _text_or_none(pl.get(FILE_HASH)),
        _text_or_none(metadata.get("tag")) if isinstance(metadata, dict) else None,
    )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def stored_documents(
    store: Store, collection: str, doc_ids: Sequence[str]
) -> dict[str, StoredDocument]:
    """The documents among ``doc_ids`` that ``collection`` holds completely, by id: their chunk
    0 (hashes, profile version, chunk count), their last chunk present with the same text hash
    and profile version, and no chunk past the last. A write cut short (a worker killed between
    two batches: chunks go in order) or stale chunks a shrink left behind are not complete, so
    such a document is written again rather than skipped. Two lookups by id, whatever the size
    of the collection."""
    if not doc_ids:
        return {}
    firsts = store.retrieve(
        collection,
        [point_id(d, 0) for d in doc_ids],
        with_payload=INVENTORY_FIELDS,
        with_vectors=False,
    )
    stored = {s.doc_id: s for p in firsts if (s := _stored(p.payload)) is not None}
    probes: dict[str, tuple[str, StoredDocument]] = {}
    for s in stored.values():
        if s.chunk_count > 1:
            probes[point_id(s.doc_id, s.chunk_count - 1)] = ("last", s)
        probes[point_id(s.doc_id, s.chunk_count)] = ("past", s)
    found = (
        store.retrieve(
            collection,
            list(probes),
            with_payload=[DOC_HASH, PROFILE_VERSION],
            with_vectors=False,
        )
        if probes
        else []  # none of them stored: no second call
    )
    incomplete: set[str] = set()
    last_ok: set[str] = set()
    for p in found:
        kind, s = probes[str(p.id)]
        pl = p.payload or {}
        if kind == "past":
            incomplete.add(s.doc_id)
        elif pl.get(DOC_HASH) == s.doc_hash and pl.get(PROFILE_VERSION) == s.profile_version:
            last_ok.add(s.doc_id)
    return {
        d: s
        for d, s in stored.items()
        if d not in incomplete and (s.chunk_count == 1 or d in last_ok)
    }


def collection_names(store: Store) -> list[str]:
    """The names a search may use: every alias, and every collection no alias points at (the
    physical collections behind aliases are not listed)."""
    aliases = store.aliases()
    behind = set(aliases.values())
    return sorted(set(aliases) | {c for c in store.collections() if c not in behind})


MISSING: Any = object()  # what first_value returns when no point holds the field


def first_value(store: Store, collection: str, path: str, *, numeric: bool) -> Any:
    """The value at payload ``path`` (dotted) of the first point holding one there (a number,
    with ``numeric``), or :data:`MISSING` when no point does."""
    if numeric:
        condition: models.Condition = models.FieldCondition(
            key=path, range=models.Range(gte=-sys.float_info.max)
        )
        flt = models.Filter(must=[condition])
    else:
        flt = models.Filter(
            must_not=[models.IsEmptyCondition(is_empty=models.PayloadField(key=path))]
        )
    points, _ = store.scroll(collection, flt=flt, limit=1, with_payload=True, with_vectors=False)
    if not points:
        return MISSING
    value: Any = points[0].payload or {}
    for part in path.split("."):
        if isinstance(value, list):
            value = next((v[part] for v in value if isinstance(v, dict) and part in v), None)
        elif isinstance(value, dict):
            value = value.get(part)
        else:
            return None
    return value
