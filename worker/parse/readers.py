"""One reader per document type, chosen by the type sniffed from the bytes (never the name).

:func:`read_document` is the parse stage's whole work on one file in one process (a benchmark,
a test): sniff, read, OCR the pages without text (``ocr_pass.py``), check that text came out.
The sandbox (``sandbox.py``) splits the same work: :func:`read_layer` in a child, then each
page to OCR as a request of its own.
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
from poolq.worker.parse.ocr_pass import finish, read_with_ocr

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
    "image/png": "image:read_image",
    "image/jpeg": "image:read_image",
    "image/tiff": "image:read_image",
}

# bump when any reader's output changes: a stored document parsed by another version is parsed
# again by a reindex even if its bytes did not change
PARSER_VERSION = "2"  # 2: OCR of scanned pages and images, table header rows


def reader_for(mime: str) -> Reader:
    target = READERS.get(mime)
    if target is None:
        raise ParseError(
            ErrorCode.UNSUPPORTED, f"{describe(mime)} is not a document type poolq reads"
        )
    module, func = target.split(":")
    fn: Reader = getattr(importlib.import_module(f"poolq.worker.parse.formats.{module}"), func)
    return fn


def read_layer(data: bytes, name: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """``data`` (the file's bytes; ``name`` only breaks ties between text types) as blocks from
    its text, with the pages that have none listed in ``unread`` for the OCR pass. Raises
    :class:`ParseError` with the file's problem (``NO_TEXT`` when it has no text and no page
    OCR could read)."""
    limits = limits or ParseLimits()
    if len(data) > limits.max_file_bytes:
        raise ParseError(
            ErrorCode.TOO_LARGE,
            f"{len(data)} bytes, over the limit of {limits.max_file_bytes} bytes per file",
        )
    mime = sniff(data, name)
    doc = reader_for(mime)(data, limits)
    if not doc.unread:
        finish(doc, limits.ocr, None)
    return doc


def read_document(data: bytes, name: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """The parse stage's whole work on ``data`` in this process: :func:`read_layer`, then OCR
    of its unread pages (``ocr_pass.py``). Never returns a document without text."""
    limits = limits or ParseLimits()
    return read_with_ocr(read_layer(data, name, limits), data, limits)
