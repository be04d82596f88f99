"""One reader per document type, chosen by the type sniffed from the bytes (never the name).

:func:`read_document` is the parse stage's whole work on one file, in whatever process runs it
(a sandbox child, ``poolq parse``, a benchmark): sniff, read, check that text came out.
Readers are imported on first use: a type's library loads only when a file of it arrives.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from poolq.wire.records.codes import ErrorCode
from poolq.wire.sniff import describe, sniff
from poolq.worker.parse.blocks import ParsedDocument
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.limits import ParseLimits

Reader = Callable[[bytes, ParseLimits], ParsedDocument]

# mime -> "module:function" under poolq.worker.parse.formats
READERS: dict[str, str] = {
    "application/pdf": "pdf:read_pdf",
    "text/html": "html:read_html",
    "application/xhtml+xml": "html:read_html",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx:read_docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx:read_pptx",
    "application/epub+zip": "epub:read_epub",
    "text/markdown": "markdown:read_markdown",
    "text/plain": "text:read_text",
}

# bump when any reader's output changes: a stored document parsed by another version is parsed
# again by a reindex even if its bytes did not change
PARSER_VERSION = "1"


def reader_for(mime: str) -> Reader:
    target = READERS.get(mime)
    if target is None:
        raise ParseError(
            ErrorCode.UNSUPPORTED, f"{describe(mime)} is not a document type poolq reads"
        )
    module, func = target.split(":")
    fn: Reader = getattr(importlib.import_module(f"poolq.worker.parse.formats.{module}"), func)
    return fn


def read_document(data: bytes, name: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """``data`` (the file's bytes; ``name`` only breaks ties between text types) as blocks.
    Raises :class:`ParseError` with the file's problem; never returns a document without text."""
    limits = limits or ParseLimits()
    if len(data) > limits.max_file_bytes:
        raise ParseError(
            ErrorCode.TOO_LARGE,
            f"{len(data)} bytes, over the limit of {limits.max_file_bytes} bytes per file",
        )
    mime = sniff(data, name)
    doc = reader_for(mime)(data, limits)
    if not any(b.text.strip() for b in doc.blocks):
        if mime == "application/pdf":
            raise ParseError(
                ErrorCode.NO_TEXT,
                f"no text layer on any of its {doc.pages} pages (a scanned PDF?): run OCR on it "
                "first, e.g. ocrmypdf",
            )
        raise ParseError(ErrorCode.NO_TEXT, f"no text in it ({describe(mime)})")
    return doc
