"""The payload every point carries: its field names, in one place.

Filters route a key to the top-level field of that name, anything else to the document's
``metadata``.
"""

from __future__ import annotations

from typing import Final

# payload fields every point carries; any other filter key is looked up in ``metadata``
TOP_LEVEL_FIELDS: Final = frozenset(
    {
        "doc_id",
        "chunk_index",
        "chunk_count",
        "text",
        "char_start",
        "char_end",
        "chunk_hash",
        "doc_hash",
        "ingested_at",
    }
)
