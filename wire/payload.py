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
# where the chunk's text came from (a hit's citation; null/empty for a document sent as text)
SOURCE: Final = "source"  # the file's path relative to the folder it was enqueued from, or URI
TITLE: Final = "title"  # the file's title (metadata, <title>, first heading), or null
MIME: Final = "mime"  # the type sniffed from the file's bytes; text/plain for a text document
PAGE_START: Final = "page_start"  # 1-based pages (PDF) or slides (PPTX) of the chunk, or null
PAGE_END: Final = "page_end"
HEADINGS: Final = "headings"  # the chunk's heading path, outermost first
FILE_HASH: Final = "file_hash"  # sha256 of the file's bytes:parser version (a reindex skips it)
OCR: Final = "ocr"  # True when the chunk's text was read by OCR (a scanned page, an image)

# labels name -> {"label", "score"} (a list of them for a multi-label classifier), written
# only by a profile that names classifiers ([labels]): payloads without them stay as they were
LABELS: Final = "labels"

# every key of a payload, in the order build_payload writes them (and LABELS last, where given)
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
    SOURCE,
    TITLE,
    MIME,
    PAGE_START,
    PAGE_END,
    HEADINGS,
    FILE_HASH,
    OCR,
)

# the fields of a hit's citation (wire/search_results.Citation), in its order
CITATION_FIELDS: Final = (SOURCE, TITLE, MIME, PAGE_START, PAGE_END, HEADINGS)
TEXT_MIME: Final = "text/plain"  # the type of a document sent as text

# the fields a filter key names directly; any other key is looked up in ``metadata``
TOP_LEVEL_FIELDS: Final = frozenset(PAYLOAD_FIELDS) - {METADATA}

# top-level fields holding an object: a filter key ``models.<name>`` is a path inside it
OBJECT_FIELDS: Final = frozenset({METADATA, MODELS, LABELS})


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
    source: str | None = None,
    title: str | None = None,
    mime: str = TEXT_MIME,
    page_start: int | None = None,
    page_end: int | None = None,
    headings: tuple[str, ...] | list[str] = (),
    file_hash: str | None = None,
    ocr: bool = False,
    labels: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The payload of one chunk's point (``models`` is copied into a plain dict; ``labels``,
    where the profile names classifiers, goes last)."""
    payload = {
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
        SOURCE: source,
        TITLE: title,
        MIME: mime,
        PAGE_START: page_start,
        PAGE_END: page_end,
        HEADINGS: list(headings),
        FILE_HASH: file_hash,
        OCR: ocr,
    }
    if labels is not None:
        payload[LABELS] = dict(labels)
    return payload
