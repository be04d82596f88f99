"""DOCX reader (python-docx): the body's paragraphs and tables in order, with heading paths.

The zip is checked first (``zip_guard``: size, ratio, members). Then the body's block items
are read in document order: paragraphs, tables, and the content of block-level content
controls (``w:sdt``, where cover pages and tables of contents live). Headers, footers,
comments and footnotes are not read (page furniture and asides).

- A paragraph's text is every ``w:t`` in it (runs, hyperlinks, fields' results, inline
  content controls, tracked insertions), ``w:tab`` as a tab and ``w:br``/``w:cr`` as line
  breaks; the fallback copy of alternate content (``mc:Fallback``) is skipped, as Word does.
- A paragraph styled "Title" is a heading above level 1; "Heading 1".."Heading 9" (or a style
  with an outline level) are headings of their level and set the path (a heading replaces
  those of its level and deeper). A paragraph in a "List ..." style or with numbering is
  kind ``list``.
- A table is one block per row, the cells' texts joined by ``" | "`` (merged cells once).
- Title: the core properties' title, else the first "Title" paragraph, else the first heading.

Not a zip, a zip that is not a DOCX, a 0-byte file: ``CORRUPT``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.blocks import Block, BlockKind, ParsedDocument, table_blocks
from poolq.worker.parse.clean import clean_text, one_line
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.zip_guard import checked_stream

MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_HEADING_NAME = re.compile(r"heading\s*([1-9])", re.I)
_TEXT_TAGS = {_W + "t": None, _W + "tab": "\t", _W + "br": "\n", _W + "cr": "\n",
              _W + "noBreakHyphen": "-"}  # fmt: skip
_STREAM_NAME = re.compile(r"file '<_io\.BytesIO object at 0x[0-9a-fA-F]+>'")  # in its errors
_CONTAINERS = (_W + "sdt", _W + "sdtContent", _W + "customXml")


def read_docx(data: bytes, limits: ParseLimits) -> ParsedDocument:
    """``data`` (a DOCX file) as blocks (no pages); see the module."""
    stream = checked_stream(data, limits, "DOCX")
    try:
        import docx
        from docx.enum.style import WD_STYLE_TYPE

        doc = docx.Document(stream)
        default = doc.styles.default(WD_STYLE_TYPE.PARAGRAPH)
        levels = _style_levels(doc)
        blocks, titled = _read_body(doc.element.body, levels, default.style_id if default else None)
        title = clean_text(doc.core_properties.title or "", join_lines=True)
    except (ParseError, MemoryError):
        raise
    except Exception as e:
        message = _STREAM_NAME.sub("it", one_line(str(e)))
        raise ParseError(ErrorCode.CORRUPT, f"not a readable DOCX: {message}") from e
    first_heading = next((b.text for b in blocks if b.kind == "heading"), None)
    return ParsedDocument(MIME, title or titled or first_heading, blocks, None)


def _paragraph_type() -> Any:
    from docx.enum.style import WD_STYLE_TYPE

    return WD_STYLE_TYPE.PARAGRAPH


def _style_levels(doc: Any) -> dict[str, tuple[int | None, bool]]:
    """style id -> (heading level: 0 for Title, 1-9; None for body text; is a list style)."""
    out: dict[str, tuple[int | None, bool]] = {}
    for style in doc.styles:
        if style.type != _paragraph_type():
            continue
        name = (style.name or "").strip()
        level: int | None = None
        match = _HEADING_NAME.fullmatch(name)
        if name.casefold() == "title":
            level = 0
        elif match:
            level = int(match.group(1))
        else:
            outline = style.element.find(f"{_W}pPr/{_W}outlineLvl")
            value = outline.get(f"{_W}val") if outline is not None else None
            if value is not None and value.isdigit() and int(value) < 9:
                level = int(value) + 1
        out[style.style_id] = (level, name.casefold().startswith("list"))
    return out


def _items(parent: Any) -> Iterator[Any]:
    """Paragraphs and tables of the body in order, looking into content controls."""
    for child in parent.iterchildren():
        if child.tag in (_W + "p", _W + "tbl"):
            yield child
        elif child.tag in _CONTAINERS:
            yield from _items(child)


def _text(element: Any) -> str:
    parts: list[str] = []
    stack = [element]
    while stack:
        node = stack.pop()
        tag = node.tag
        if tag == _FALLBACK:
            continue
        if tag in _TEXT_TAGS:
            mark = _TEXT_TAGS[tag]
            parts.append(node.text or "" if mark is None else mark)
            continue
        stack.extend(reversed(node))
    return "".join(parts)


def _read_body(
    body: Any, levels: dict[str, tuple[int | None, bool]], default_style: str | None
) -> tuple[list[Block], str | None]:
    """The blocks, and the text of the first paragraph styled "Title"."""
    blocks: list[Block] = []
    titled: str | None = None
    stack: list[tuple[int, str]] = []
    for item in _items(body):
        path = tuple(t for _, t in stack)
        if item.tag == _W + "tbl":
            rows = []
            for row in item.iterchildren(_W + "tr"):
                cells = [clean_text(_text(c), join_lines=True) for c in row.iterchildren(_W + "tc")]
                rows.append(" | ".join(c for c in cells if c))
            blocks += table_blocks(rows, None, path, header=True)  # the first row: the header
            continue
        text = clean_text(_text(item))
        if not text:
            continue
        ppr = item.find(_W + "pPr")
        style_el = ppr.find(_W + "pStyle") if ppr is not None else None
        style = style_el.get(_W + "val") if style_el is not None else default_style
        level, list_style = levels.get(style or "", (None, False))
        if level is not None:
            heading = clean_text(text, join_lines=True)
            stack = [(lv, t) for lv, t in stack if lv < level] + [(level, heading)]
            titled = heading if titled is None and level == 0 else titled
            blocks.append(Block(heading, None, tuple(t for _, t in stack), "heading"))
            continue
        numbered = ppr is not None and ppr.find(_W + "numPr") is not None
        kind: BlockKind = "list" if list_style or numbered else "paragraph"
        blocks.append(Block(text, None, path, kind))
    return blocks, titled
