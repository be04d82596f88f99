"""A parsed document: typed blocks of text, each with where it came from.

A reader (``formats/``) never flattens a file into one string: it yields :class:`Block` s in
reading order, each with the page it is on (the 1-based physical page index of a PDF, the slide
number of a PPTX, None where a format has no pages) and its heading path (outermost first). A
heading is a block of its own (``kind="heading"``) whose path ends with its own text, so the
blocks under it share its path. ``layout.py`` joins the blocks into the text an ingest job
carries, with the spans of sections and pages.
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


@dataclass(frozen=True)
class ParsedDocument:
    """What a reader returns. ``mime``: the detected type (``application/pdf``); ``title``: from
    the file's metadata or its first heading (None if neither); ``pages``: pages (PDF) or slides
    (PPTX) in the file, None for formats without pages; ``blocks`` in reading order."""

    mime: str
    title: str | None
    blocks: list[Block] = field(default_factory=list)
    pages: int | None = None

    def to_wire(self) -> dict[str, object]:
        """A plain map (msgpack- and JSON-able) for the trip from a parse child process."""
        return {
            "mime": self.mime,
            "title": self.title,
            "pages": self.pages,
            "blocks": [[b.text, b.page, list(b.headings), b.kind] for b in self.blocks],
        }

    @classmethod
    def from_wire(cls, data: dict[str, object]) -> ParsedDocument:
        raw_blocks = data["blocks"]
        assert isinstance(raw_blocks, list)
        blocks = [Block(t, p, tuple(h), k) for t, p, h, k in raw_blocks]
        title, pages, mime = data.get("title"), data.get("pages"), data["mime"]
        return cls(
            str(mime),
            None if title is None else str(title),
            blocks,
            pages if isinstance(pages, int) else None,
        )
