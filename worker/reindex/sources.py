"""Where a reindex's documents come from: :mod:`poolq.wire.sources` (a JSONL file, or a folder
of text files), read by the same rules by ``poolq enqueue`` and a worker's reindex, so it lives
in the wire, which both sides import."""

from __future__ import annotations

from poolq.wire.sources import (
    DEFAULT_INCLUDE,
    TEXT_SUFFIXES,
    FolderSource,
    JsonlSource,
    Source,
    open_source,
)

__all__ = [
    "DEFAULT_INCLUDE",
    "TEXT_SUFFIXES",
    "FolderSource",
    "JsonlSource",
    "Source",
    "open_source",
]
