"""The payload every point carries: its field names and the builder of the dict, in one place.

Ingest builds each point's payload with :func:`build_payload`; the filter language routes a key
to the top-level field of that name (:data:`TOP_LEVEL_FIELDS`), anything else to the document's
``metadata``; the tests' audit, the inventory and search read fields by these names. Changing a name or
a value changes what existing collections hold: the payload is kept exactly as it always was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

DOC_ID: Final = "doc_id"
CHUNK_INDEX: Final = "chunk_index"
CHUNK_COUNT: Final = "chunk_count"
TEXT: Final = "text"
CHAR_START: Final = "char_start"  # the chunk's character span in the document text
CHAR_END: Final = "char_end"
CHUNK_HASH: Final = "chunk_hash"  # of the chunk's text
DOC_HASH: Final = "doc_hash"  # of the document's text
META_HASH: Final = "meta_hash"  # of the document's metadata (canonical JSON)
METADATA: Final = "metadata"  # the document's metadata, as submitted
MODELS: Final = "models"  # vector name -> the model behind it
PROFILE_VERSION: Final = "profile_version"  # of the profile that encoded the point
INGESTED_AT: Final = "ingested_at"  # ISO 8601, UTC

# every key of a payload, in the order build_payload writes them
PAYLOAD_FIELDS: Final = (
    DOC_ID,
    CHUNK_INDEX,
    CHUNK_COUNT,
    TEXT,
    CHAR_START,
    CHAR_END,
    CHUNK_HASH,
    DOC_HASH,
    META_HASH,
    METADATA,
    MODELS,
    PROFILE_VERSION,
    INGESTED_AT,
)

# the fields a filter key names directly; any other key is looked up in ``metadata``
TOP_LEVEL_FIELDS: Final = frozenset(PAYLOAD_FIELDS) - {METADATA}

# top-level fields holding an object: a filter key ``models.<name>`` is a path inside it
OBJECT_FIELDS: Final = frozenset({METADATA, MODELS})


def build_payload(
    *,
    doc_id: str,
    chunk_index: int,
    chunk_count: int,
    text: str,
    char_start: int,
    char_end: int,
    chunk_hash: str,
    doc_hash: str,
    meta_hash: str,
    metadata: dict[str, Any],
    models: Mapping[str, str],
    profile_version: str | None,
    ingested_at: str,
) -> dict[str, Any]:
    """The payload of one chunk's point (``models`` is copied into a plain dict)."""
    return {
        DOC_ID: doc_id,
        CHUNK_INDEX: chunk_index,
        CHUNK_COUNT: chunk_count,
        TEXT: text,
        CHAR_START: char_start,
        CHAR_END: char_end,
        CHUNK_HASH: chunk_hash,
        DOC_HASH: doc_hash,
        META_HASH: meta_hash,
        METADATA: metadata,
        MODELS: dict(models),
        PROFILE_VERSION: profile_version,
        INGESTED_AT: ingested_at,
    }
