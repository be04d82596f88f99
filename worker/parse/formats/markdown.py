"""Markdown reader (markdown-it-py, CommonMark with GFM tables and strikethrough).

Blocks from the token stream: ATX and setext headings are heading blocks and set the path (a
heading replaces those of its level and deeper); paragraphs are blocks, of kind ``list``
inside a list item; fenced and indented code is kind ``code`` with its content as written;
each table row is a ``table`` block with the cells joined by ``" | "``; block quotes give
their paragraphs. Inline markup is rendered to its text: emphasis and strikethrough markers
go, a link keeps its text (not its URL), an image its alt text, inline code its content
(no backticks), inline HTML tags go (``<br>`` is a line break), entities are decoded. Raw
HTML blocks (``<div align="center">...``, ``<details>``) are read by the HTML reader's
block extraction, sharing the heading path.

A YAML front matter block (``---`` lines at the very start) is not text; its ``title:`` is
the document's title, else the first heading is. No pages.
"""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt

from poolq.worker.parse.blocks import Block, BlockKind, ParsedDocument, table_blocks
from poolq.worker.parse.clean import clean_code, clean_text
from poolq.worker.parse.limits import ParseLimits

MIME = "text/markdown"
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_TITLE = re.compile(r"^title[ \t]*:[ \t]*(.+?)[ \t]*$", re.M)
_BR_TAG = re.compile(r"<br\s*/?>", re.I)
_PARSER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def read_markdown(data: bytes, limits: ParseLimits) -> ParsedDocument:
    """``data`` (a Markdown file) as blocks (no pages); see the module."""
    from poolq.worker.parse.formats.text import decode_text

    text = decode_text(data).replace("\r\n", "\n").replace("\r", "\n")
    title = None
    front = _FRONT_MATTER.match(text)
    if front:
        found = _TITLE.search(front.group(1))
        title = clean_text(found.group(1).strip("\"'"), join_lines=True) if found else None
        text = text[front.end() :]
    blocks = _Reader().read(_PARSER.parse(text))
    first_heading = next((b.text for b in blocks if b.kind == "heading"), None)
    return ParsedDocument(MIME, title or first_heading, blocks, None)


def inline_text(token: Any) -> str:
    """An ``inline`` token's text without its markup (the module's rules)."""
    parts: list[str] = []
    for child in token.children or []:
        kind = child.type
        if kind in ("text", "code_inline"):
            parts.append(child.content)
        elif kind == "image":
            parts.append(child.content)  # the alt text
        elif kind == "softbreak":
            parts.append(" ")
        elif kind == "hardbreak" or (kind == "html_inline" and _BR_TAG.fullmatch(child.content)):
            parts.append("\n")
    return "".join(parts)


class _Reader:
    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.stack: list[tuple[int, str]] = []
        self.lists = 0
        self.row: list[str] | None = None
        self.table: list[str] = []  # the rows of the table being read
        self.heading: int | None = None

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(t for _, t in self.stack)

    def add(self, text: str, kind: BlockKind) -> None:
        if text:
            self.blocks.append(Block(text, None, self.path, kind))

    def read(self, tokens: list[Any]) -> list[Block]:
        for token in tokens:
            kind = token.type
            if kind == "heading_open":
                self.heading = int(token.tag[1])
            elif kind == "heading_close":
                self.heading = None
            elif kind in ("bullet_list_open", "ordered_list_open"):
                self.lists += 1
            elif kind in ("bullet_list_close", "ordered_list_close"):
                self.lists -= 1
            elif kind == "table_open":
                self.table = []
            elif kind == "table_close":  # GFM: a table's first row is its header
                self.blocks += table_blocks(self.table, None, self.path, header=True)
                self.table = []
            elif kind == "tr_open":
                self.row = []
            elif kind == "tr_close":
                self.table.append(" | ".join(c for c in self.row or [] if c))
                self.row = None
            elif kind in ("fence", "code_block"):
                self.add(clean_code(token.content), "code")
            elif kind == "html_block":
                self.html(token.content)
            elif kind == "inline":
                self.inline(token)
        return self.blocks

    def inline(self, token: Any) -> None:
        text = clean_text(inline_text(token))
        if self.row is not None:
            self.row.append(clean_text(text, join_lines=True))
        elif self.heading is not None:
            heading = clean_text(text, join_lines=True)
            if heading:
                self.stack = [(lv, t) for lv, t in self.stack if lv < self.heading]
                self.stack.append((self.heading, heading))
                self.add(heading, "heading")
        else:
            self.add(text, "list" if self.lists else "paragraph")

    def html(self, markup: str) -> None:
        from selectolax.lexbor import LexborHTMLParser

        from poolq.worker.parse.formats.html import BlockWalker
        from poolq.worker.parse.formats.html_boilerplate import strip_never_text

        tree = LexborHTMLParser(markup, is_fragment=True)
        strip_never_text(tree)
        if tree.root is None:
            return
        walker = BlockWalker()
        walker.stack = list(self.stack)
        self.blocks.extend(walker.walk(tree.root))
        self.stack = walker.stack
