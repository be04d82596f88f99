"""Files as applications submit them to be parsed (PDF, HTML, DOCX, PPTX, EPUB, Markdown, text).

A file document is ``{"id": str, "bytes": bytes}`` (the file's content, sent through Redis),
``{"id": str, "path": str}`` (an absolute path the workers can read) or ``{"id": str, "uri": str}``
(an object or URL the workers fetch: ``s3://``, ``gs://``, ``az://``, ``https://``, ``file://``,
see :mod:`poolq.wire.uris`), with optional
``"metadata"`` (JSON values, as for text documents) and ``"source"`` (what a hit cites: default
the URI, the path, or the id). The client needs no parsing library: a worker's parse stage sniffs the
type from the bytes (``worker/parse/``). :func:`is_file_document` tells file documents from
text ones; :func:`validate_file` checks one, with a :class:`~poolq.wire.documents.DocumentError`
naming its id and field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from poolq.wire.documents import MAX_ID_CHARS, DocumentError, checked_metadata
from poolq.wire.records.codes import ErrorCode
from poolq.wire.uris import UriError, parse_uri

FILE_FIELDS = frozenset({"id", "bytes", "path", "uri", "metadata", "source"})


@dataclass(frozen=True)
class FileDocument:
    id: str
    data: bytes | None  # the content, or None to read ``path``
    path: str | None
    source: str
    metadata: dict[str, Any] = field(default_factory=dict)
    uri: str | None = None  # fetched by the worker (then ``data`` and ``path`` are None)


def is_file_document(raw: Any) -> bool:
    """A document given by its bytes, a path or a URI rather than its text."""
    return (
        isinstance(raw, dict)
        and ("bytes" in raw or "path" in raw or "uri" in raw)
        and "text" not in raw
    )


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
    data, path, uri = raw.get("bytes"), raw.get("path"), raw.get("uri")
    if [data, path, uri].count(None) != 2:
        return DocumentError(doc_id, "bytes", "give exactly one of bytes, path and uri")
    if uri is not None and (problem := uri_problem(uri)) is not None:
        return DocumentError(doc_id, "uri", problem)
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
        source = uri if uri is not None else path if path is not None else doc_id
    if not isinstance(source, str) or not source:
        return DocumentError(doc_id, "source", f"expected a non-empty string, got {source!r}")
    metadata = checked_metadata(doc_id, raw.get("metadata"))
    if isinstance(metadata, DocumentError):
        return metadata
    return FileDocument(doc_id, None if data is None else bytes(data), path, source, metadata, uri)


def uri_problem(uri: Any) -> str | None:
    """Why ``uri`` cannot name one document to fetch, or None."""
    if not isinstance(uri, str) or not uri:
        return f"expected a URI string, got {uri!r}"
    try:
        parsed = parse_uri(uri)
    except UriError as e:
        return str(e)
    if parsed.is_prefix:
        return (
            f"{uri!r} is a prefix (many objects): `poolq enqueue {uri}` lists it; a document "
            "names one object"
        )
    return None
