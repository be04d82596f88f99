"""A parsed document: typed blocks of text, each with where it came from.

A reader (``formats/``) never flattens a file into one string: it yields :class:`Block` s in
reading order, each with the page it is on (the 1-based physical page index of a PDF, the slide
number of a PPTX, None where a format has no pages) and its heading path (outermost first). A
heading is a block of its own (``kind="heading"``) whose path ends with its own text, so the
blocks under it share its path. ``layout.py`` joins the blocks into the text an ingest job
carries, with the spans of sections and pages.

A table is a run of ``table`` blocks, one a row; where the format names a header row (HTML
``th``/``thead``, the first row of a DOCX or PPTX table, Markdown's header), every block of
the table carries it as ``header`` (the header row's own block too), so that the chunker can
start each chunk of rows with it (``chunks/tables.py``).

A page with no usable text layer (a scan) is listed in ``unread`` with the heading path in
effect there; the OCR pass (``ocr_pass.py``) reads it and lists it in ``ocr_pages``. A page
the OCR pass could not read is in ``page_errors`` (page, code, message) while the rest lands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

BlockKind = Literal["heading", "paragraph", "list", "table", "code", "caption"]


@dataclass(frozen=True)
class Block:
    """One unit of text: a paragraph, a heading, a list item, a table row group, a code block.
    ``text`` is clean (no markup, entities, ligatures or line-end hyphens) and non-empty."""

    text: str
    page: int | None = None
    headings: tuple[str, ...] = ()
    kind: BlockKind = "paragraph"
    header: str | None = None  # a table row's header row (its table's), or None


@dataclass(frozen=True)
class ParsedDocument:
    """What a reader returns. ``mime``: the detected type (``application/pdf``); ``title``: from
    the file's metadata or its first heading (None if neither); ``pages``: pages (PDF) or slides
    (PPTX) in the file, None for formats without pages; ``blocks`` in reading order."""

    mime: str
    title: str | None
    blocks: list[Block] = field(default_factory=list)
    pages: int | None = None
    unread: tuple[tuple[int, tuple[str, ...]], ...] = ()  # (page, headings there) to OCR
    ocr_pages: tuple[int, ...] = ()  # pages whose blocks come from OCR
    page_errors: tuple[tuple[int, str, str], ...] = ()  # (page, code, message)

    def to_wire(self) -> dict[str, object]:
        """A plain map (msgpack- and JSON-able) for the trip from a parse child process."""
        return {
            "mime": self.mime,
            "title": self.title,
            "pages": self.pages,
            "blocks": [[b.text, b.page, list(b.headings), b.kind, b.header] for b in self.blocks],
            "unread": [[p, list(h)] for p, h in self.unread],
            "ocr_pages": list(self.ocr_pages),
            "page_errors": [list(e) for e in self.page_errors],
        }

    @classmethod
    def from_wire(cls, data: dict[str, object]) -> ParsedDocument:
        raw_blocks = data["blocks"]
        assert isinstance(raw_blocks, list)
        blocks = [Block(t, p, tuple(h), k, *rest) for t, p, h, k, *rest in raw_blocks]
        title, pages, mime = data.get("title"), data.get("pages"), data["mime"]
        unread = data.get("unread") or []
        errors = data.get("page_errors") or []
        assert isinstance(unread, list) and isinstance(errors, list)
        return cls(
            str(mime),
            None if title is None else str(title),
            blocks,
            pages if isinstance(pages, int) else None,
            tuple((int(p), tuple(h)) for p, h in unread),
            tuple(int(p) for p in data.get("ocr_pages") or []),  # type: ignore[attr-defined]
            tuple((int(p), str(c), str(m)) for p, c, m in errors),
        )


def table_blocks(
    rows: list[str], page: int | None, headings: tuple[str, ...], *, header: bool
) -> list[Block]:
    """A table's rows (cells already joined by ``" | "``) as ``table`` blocks; with
    ``header``, the first row is the header row, carried by every block of the table."""
    rows = [r for r in rows if r]
    top = rows[0] if header and len(rows) > 1 else None
    return [Block(r, page, headings, "table", top) for r in rows]
