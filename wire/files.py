"""Files as applications submit them to be parsed (PDF, HTML, DOCX, PPTX, EPUB, Markdown, text).

A file document is ``{"id": str, "bytes": bytes}`` (the file's content, sent through Redis) or
``{"id": str, "path": str}`` (an absolute path the workers can read), with optional
``"metadata"`` (JSON values, as for text documents) and ``"source"`` (what a hit cites: default
the path, or the id). The client needs no parsing library: a worker's parse stage sniffs the
type from the bytes (``worker/parse/``). :func:`is_file_document` tells file documents from
text ones; :func:`validate_file` checks one, with a :class:`~poolq.wire.documents.DocumentError`
naming its id and field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from poolq.wire.documents import MAX_ID_CHARS, DocumentError, checked_metadata
from poolq.wire.records.codes import ErrorCode

FILE_FIELDS = frozenset({"id", "bytes", "path", "metadata", "source"})


@dataclass(frozen=True)
class FileDocument:
    id: str
    data: bytes | None  # the content, or None to read ``path``
    path: str | None
    source: str
    metadata: dict[str, Any] = field(default_factory=dict)


def is_file_document(raw: Any) -> bool:
    """A document given by its bytes or a path rather than its text."""
    return isinstance(raw, dict) and ("bytes" in raw or "path" in raw) and "text" not in raw


def validate_file(raw: Any, position: int, *, max_file_bytes: int) -> FileDocument | DocumentError:
    if not isinstance(raw, dict):
        return DocumentError(
            f"#{position}", "document", f"expected an object, got {type(raw).__name__}"
        )
    doc_id = raw.get("id")
    if not isinstance(doc_id, str) or not doc_id:
        return DocumentError(f"#{position}", "id", f"expected a non-empty string, got {doc_id!r}")
    if len(doc_id) > MAX_ID_CHARS:
        return DocumentError(f"#{position}", "id", f"longer than {MAX_ID_CHARS} characters")
    unknown = sorted(set(raw) - FILE_FIELDS)
    if unknown:
        allowed = ", ".join(sorted(FILE_FIELDS))
        return DocumentError(doc_id, unknown[0], f"unknown field (allowed: {allowed})")
    data, path = raw.get("bytes"), raw.get("path")
    if (data is None) == (path is None):
        return DocumentError(doc_id, "bytes", "give exactly one of bytes and path")
    if data is not None:
        if not isinstance(data, bytes | bytearray):
            return DocumentError(doc_id, "bytes", f"expected bytes, got {type(data).__name__}")
        if len(data) > max_file_bytes:
            return DocumentError(
                doc_id, "bytes",
                f"{len(data)} bytes, over the limit of {max_file_bytes} bytes per file",
                ErrorCode.TOO_LARGE,
            )  # fmt: skip
    if path is not None and (not isinstance(path, str) or not path.startswith("/")):
        return DocumentError(doc_id, "path", f"expected an absolute path, got {path!r}")
    source = raw.get("source")
    if source is None:
        source = path if path is not None else doc_id
    if not isinstance(source, str) or not source:
        return DocumentError(doc_id, "source", f"expected a non-empty string, got {source!r}")
    metadata = checked_metadata(doc_id, raw.get("metadata"))
    if isinstance(metadata, DocumentError):
        return metadata
    return FileDocument(doc_id, None if data is None else bytes(data), path, source, metadata)
