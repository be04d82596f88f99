"""PPTX reader (python-pptx): one page per slide, the slide's title as its heading.

The zip is checked first (``zip_guard``). For slide ``n`` (1-based, ``page=n``):

- the title placeholder's text is a heading block, and the path of all the slide's blocks
  (``(title,)``; ``()`` on a slide without one);
- the other shapes are read top to bottom, then left to right (their order on the slide,
  not the order they were drawn in), groups looked into: each paragraph of a text frame is
  a block, each table row a ``table`` block with the cells joined by ``" | "``; date, footer,
  header and slide-number placeholders are page furniture and are skipped, as are pictures,
  charts and media;
- the speaker notes follow, one paragraph block per paragraph, on the same page and path:
  they often carry what the slide only hints at, and a search should find it.

Title: the core properties' title, else the first slide's title. Not a zip, a zip that is not
a PPTX: ``CORRUPT``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.blocks import Block, ParsedDocument, table_blocks
from poolq.worker.parse.clean import clean_text, one_line
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.zip_guard import checked_stream

MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
_STREAM_NAME = re.compile(r"file '<_io\.BytesIO object at 0x[0-9a-fA-F]+>'")  # in its errors


def read_pptx(data: bytes, limits: ParseLimits) -> ParsedDocument:
    """``data`` (a PPTX file) as blocks, one page per slide; see the module."""
    stream = checked_stream(data, limits, "PPTX")
    try:
        from pptx import Presentation

        prs = Presentation(stream)
        blocks: list[Block] = []
        first_title: str | None = None
        slides = 0
        for number, slide in enumerate(prs.slides, start=1):
            slides = number
            title = _slide(slide, number, blocks)
            first_title = first_title or (title if number == 1 else None)
        title = clean_text(prs.core_properties.title or "", join_lines=True)
    except (ParseError, MemoryError):
        raise
    except Exception as e:
        message = _STREAM_NAME.sub("it", one_line(str(e)))
        raise ParseError(ErrorCode.CORRUPT, f"not a readable PPTX: {message}") from e
    return ParsedDocument(MIME, title or first_title, blocks, slides)


def _slide(slide: Any, page: int, blocks: list[Block]) -> str | None:
    """Slide ``page``'s blocks appended to ``blocks``; returns its title."""
    from pptx.enum.shapes import PP_PLACEHOLDER

    furniture = {
        PP_PLACEHOLDER.DATE,
        PP_PLACEHOLDER.FOOTER,
        PP_PLACEHOLDER.HEADER,
        PP_PLACEHOLDER.SLIDE_NUMBER,
    }
    title_shape = slide.shapes.title
    title = clean_text(title_shape.text_frame.text, join_lines=True) if title_shape else ""
    path = (title,) if title else ()
    if title:
        blocks.append(Block(title, page, path, "heading"))
    title_id = title_shape.shape_id if title_shape is not None else None
    for shape in _in_reading_order(slide.shapes):
        if shape.shape_id == title_id:
            continue
        if shape.is_placeholder and shape.placeholder_format.type in furniture:
            continue
        if shape.has_text_frame:
            _paragraphs(shape.text_frame.paragraphs, page, path, blocks)
        elif getattr(shape, "has_table", False) and shape.has_table:
            rows = []
            for row in shape.table.rows:
                cells = [clean_text(c.text_frame.text, join_lines=True) for c in row.cells]
                rows.append(" | ".join(c for c in cells if c))
            blocks += table_blocks(rows, page, path, header=True)  # the first row: the header
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        if frame is not None:
            _paragraphs(frame.paragraphs, page, path, blocks)
    return title or None


def _paragraphs(
    paragraphs: Iterable[Any], page: int, path: tuple[str, ...], out: list[Block]
) -> None:
    for para in paragraphs:
        text = clean_text(para.text)
        if text:
            out.append(Block(text, page, path, "paragraph"))


def _position(shape: Any) -> tuple[int, int]:
    try:
        return (shape.top or 0, shape.left or 0)
    except Exception:  # a placeholder whose layout lost its position
        return (0, 0)


def _in_reading_order(shapes: Iterable[Any]) -> Iterator[Any]:
    """Shapes top to bottom, left to right; a group's shapes in their place."""
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    for shape in sorted(shapes, key=_position):
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _in_reading_order(shape.shapes)
        else:
            yield shape
