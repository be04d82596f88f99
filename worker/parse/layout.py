"""A parsed file as the document an ingest job carries: its blocks joined into one text (a
blank line between blocks, so the chunker's paragraph boundaries fall between them) and the
``layout`` (``wire/layout.py``) that maps the text back to sections and pages."""

from __future__ import annotations

import hashlib
from typing import Any

from poolq.wire.layout import Layout
from poolq.worker.parse.blocks import ParsedDocument
from poolq.worker.parse.readers import PARSER_VERSION

BLOCK_SEPARATOR = "\n\n"


def file_hash(data: bytes) -> str:
    """What a reindex compares to find an unchanged file: its bytes and the parser's version."""
    return f"{hashlib.sha256(data).hexdigest()}:{PARSER_VERSION}"


def text_and_layout(
    parsed: ParsedDocument, *, source: str | None, hashed: str | None = None
) -> tuple[str, Layout]:
    parts: list[str] = []
    sections: list[tuple[int, tuple[str, ...]]] = []
    pages: list[tuple[int, int]] = []
    tables: list[list[int]] = []  # [start, header_end, end] of each table with a header row
    header: str | None = None  # of the table being laid out
    pos = 0
    for block in parsed.blocks:
        text = block.text.strip()
        if not text:
            continue
        if parts:
            parts.append(BLOCK_SEPARATOR)
            pos += len(BLOCK_SEPARATOR)
        in_table = block.kind == "table" and block.header is not None
        if in_table and (block.header != header or text == (block.header or "").strip()):
            tables.append([pos, pos + len(text), pos + len(text)])  # its header row
        elif in_table and tables:
            tables[-1][2] = pos + len(text)
        header = block.header if in_table else None
        if not sections or sections[-1][1] != block.headings:
            sections.append((pos, block.headings))
        if block.page is not None and (not pages or pages[-1][1] != block.page):
            pages.append((pos, block.page))
        parts.append(text)
        pos += len(text)
    if sections and sections[0] == (0, ()):
        sections = sections if len(sections) > 1 else []
    layout = Layout(
        mime=parsed.mime,
        source=source,
        title=parsed.title,
        sections=tuple(sections),
        pages=tuple(pages),
        file_hash=hashed,
        ocr=tuple(parsed.ocr_pages),
        tables=tuple((a, h, e) for a, h, e in tables if e > h),  # (a header row alone: none)
    )
    return "".join(parts), layout


def parsed_document(
    doc_id: str,
    parsed: ParsedDocument,
    *,
    source: str | None,
    metadata: dict[str, Any] | None = None,
    hashed: str | None = None,
) -> dict[str, Any]:
    """The ingest job's document (``{"id", "text", "metadata", "layout"}``) for a parsed file."""
    text, layout = text_and_layout(parsed, source=source, hashed=hashed)
    return {"id": doc_id, "text": text, "metadata": metadata or {}, "layout": layout.to_wire()}
