"""Documents as applications submit them, validated one by one.

A document is ``{"id": str, "text": str, "metadata": {...}}`` (metadata optional, JSON values
only); a document the parse stage read from a file also carries its ``layout``
(:mod:`poolq.wire.layout`: type, source, title, sections and pages). A bad document yields a :class:`DocumentError` naming its id (or position) and the field;
it never affects the other documents of the job.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from poolq.wire.layout import Layout, LayoutError
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.results import DocumentErrorRecord

MAX_ID_CHARS = 512
DEFAULT_MAX_DOCUMENT_BYTES = 1 << 20  # 1 MiB of UTF-8 text per document
MAX_PARSED_DOCUMENT_BYTES = 32 << 20  # the text of a file the parse stage read
MAX_METADATA_DEPTH = 16


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    layout: Layout | None = None

    # computed once per document (a job writes them on every chunk's payload)
    @cached_property
    def content_hash(self) -> str:
        """Of the text, and of the layout where there is one (a file whose headings or pages
        changed is written again)."""
        if self.layout is None:
            return content_hash(self.text)
        return content_hash(self.text + "\0" + self.layout.canonical())

    @cached_property
    def metadata_hash(self) -> str:
        """Of the metadata as canonical JSON (key order does not matter)."""
        canonical = json.dumps(self.metadata, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class DocumentError:
    """``ref``: the document's id, or ``#position`` when it has no usable id; ``code``: why,
    for programs (a refused document is a bad request; a document the worker failed to encode
    carries that failure's code)."""

    ref: str
    field: str
    message: str
    code: ErrorCode = ErrorCode.BAD_REQUEST

    def as_record(self) -> DocumentErrorRecord:
        return DocumentErrorRecord(self.ref, self.field, f"{self.field}: {self.message}", self.code)

    def as_dict(self) -> dict[str, Any]:
        return self.as_record().to_wire()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_problem(value: Any, path: str, depth: int = 0) -> str | None:
    if depth > MAX_METADATA_DEPTH:
        return f"{path} nests deeper than {MAX_METADATA_DEPTH} levels"
    if value is None or isinstance(value, bool | int | str):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value}, which JSON cannot represent"
    if isinstance(value, list):
        for i, v in enumerate(value):
            if p := json_problem(v, f"{path}[{i}]", depth + 1):
                return p
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{path} has a non-string key {k!r}"
            if p := json_problem(v, f"{path}.{k}", depth + 1):
                return p
        return None
    return f"{path} is a {type(value).__name__}, not a JSON value"


def checked_metadata(doc_id: str, metadata: Any) -> dict[str, Any] | DocumentError:
    """A document's ``metadata`` (None: empty), or the error naming what is not JSON in it."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        return DocumentError(
            doc_id, "metadata", f"expected an object, got {type(metadata).__name__}"
        )
    if problem := json_problem(metadata, "metadata"):
        return DocumentError(
            doc_id, "metadata", problem.removeprefix("metadata").lstrip(".") or problem
        )
    return metadata


def validate_document(
    raw: Any, position: int, *, max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
) -> Document | DocumentError:
    """``max_bytes`` bounds a document's text; ``MAX_PARSED_DOCUMENT_BYTES`` that of a document
    the parse stage read from a file (one with a ``layout``: a manual of a thousand pages)."""
    if not isinstance(raw, dict):
        return DocumentError(
            f"#{position}", "document", f"expected an object, got {type(raw).__name__}"
        )
    doc_id = raw.get("id")
    if doc_id is None or doc_id == "":
        return DocumentError(
            f"#{position}", "id", "missing (every document needs a non-empty string id)"
        )
    if not isinstance(doc_id, str):
        return DocumentError(
            f"#{position}", "id", f"expected a string, got {type(doc_id).__name__} {doc_id!r}"
        )
    if len(doc_id) > MAX_ID_CHARS:
        return DocumentError(f"#{position}", "id", f"longer than {MAX_ID_CHARS} characters")
    unknown = sorted(set(raw) - {"id", "text", "metadata", "layout"})
    if unknown:
        return DocumentError(
            doc_id, unknown[0], "unknown field (allowed: id, text, metadata, layout)"
        )
    text = raw.get("text")
    if not isinstance(text, str):
        got = "missing" if text is None else f"a {type(text).__name__}"
        return DocumentError(doc_id, "text", f"expected a string, got {got}")
    if not text.strip():
        return DocumentError(doc_id, "text", "empty (nothing to index)")
    size = len(text.encode("utf-8", errors="surrogatepass"))
    limit = max_bytes if raw.get("layout") is None else max(max_bytes, MAX_PARSED_DOCUMENT_BYTES)
    if size > limit:
        return DocumentError(
            doc_id, "text", f"{size} bytes exceeds the limit of {limit} bytes per document",
            ErrorCode.TOO_LARGE if raw.get("layout") is not None else ErrorCode.BAD_REQUEST,
        )  # fmt: skip
    metadata = checked_metadata(doc_id, raw.get("metadata"))
    if isinstance(metadata, DocumentError):
        return metadata
    layout = None
    if raw.get("layout") is not None:
        try:
            layout = Layout.from_wire(raw["layout"], len(text))
        except LayoutError as e:
            return DocumentError(doc_id, "layout", str(e))
    return Document(doc_id, text, metadata, layout)


def validate_documents(
    raw_documents: list[Any], *, max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
) -> tuple[list[Document], list[DocumentError]]:
    """Every valid document, and an error for each invalid or repeated one (input order)."""
    docs: list[Document] = []
    errors: list[DocumentError] = []
    seen: set[str] = set()
    for pos, raw in enumerate(raw_documents):
        doc = validate_document(raw, pos, max_bytes=max_bytes)
        if isinstance(doc, Document) and doc.id in seen:
            doc = DocumentError(doc.id, "id", "appears more than once in this job")
        if isinstance(doc, DocumentError):
            errors.append(doc)
        else:
            seen.add(doc.id)
            docs.append(doc)
    return docs, errors
