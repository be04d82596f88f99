"""HTML and XHTML reader (selectolax's Lexbor parser): the page's main content as blocks.

The bytes are decoded as the HTML Standard says (a BOM, else ``<meta charset>`` in the first
1024 bytes, else UTF-8; bytes that are not UTF-8 without a declaration are read as
Windows-1252, as browsers do). Entities are decoded by the parser. Then:

1. elements that never hold text and hidden ones go (``html_boilerplate.strip_never_text``);
2. the content is ``<main>``, else ``[role=main]``, else the page's only ``<article>``, else
   ``<body>``; navigation, banners, sidebars, cookie bars and the like go from it
   (``html_boilerplate.strip_boilerplate``); if that leaves no text, the content is read
   again without step 2's removals (a page whose whole body looked like boilerplate);
3. :class:`BlockWalker` turns it into blocks: ``h1``-``h6`` are heading blocks and set the
   heading path (a heading replaces those of its level and deeper); ``p``, ``li`` (kind
   ``list``), ``dt``/``dd``, ``blockquote``, ``figcaption``/``caption`` (kind ``caption``),
   ``pre`` (kind ``code``, line breaks kept) and table rows (cells joined by ``" | "``, kind
   ``table``) are blocks; text that sits directly in a ``div`` or ``section`` between them is
   a paragraph of its own. Whitespace collapses as a browser shows it; ``<br>`` is a line break.
   A table that holds headings, paragraphs or lists is layout, read as a container.

Title: ``<title>``; a site name joined to it (``"Article | Site"``) is cut off when the page
names its site (``og:site_name``, ``application-name``) or when the part that is left is the
page's ``<h1>``; otherwise the whole title stays. No ``<title>``: the first ``<h1>``.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.blocks import Block, BlockKind, ParsedDocument, table_blocks
from poolq.worker.parse.clean import clean_code, clean_text, one_line
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.formats.html_boilerplate import (
    strip_boilerplate,
    strip_never_text,
    word_set,
)
from poolq.worker.parse.limits import ParseLimits

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# elements whose text is one block (of this kind) unless they hold blocks themselves
LEAVES: dict[str, BlockKind] = {
    "p": "paragraph", "li": "list", "dt": "paragraph", "dd": "paragraph",
    "blockquote": "paragraph", "figcaption": "caption", "caption": "caption",
    "summary": "paragraph", "address": "paragraph", "legend": "caption",
}  # fmt: skip
INLINE = word_set(
    "a abbr b bdi bdo cite code data del dfn em font i img ins kbd label mark q rp rt ruby s "
    "samp small span strike strong sub sup time tt u var wbr big nobr math"
)
SKIP = frozenset(("-comment", "-doctype", "head", "script", "style", "template"))
# a table whose cells hold these is page layout, not data
_LAYOUT_TABLE = ", ".join(
    f"{cell} {inner}"
    for cell in ("td", "th")
    for inner in ("p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "table", "pre", "div")
)
_WHITESPACE = re.compile(r"\s+")
_TITLE_SEPARATOR = re.compile(r"\s+[|·•:—–-]{1,2}\s+")


class BlockWalker:
    """Blocks from element trees, in document order. One walker may read several trees (the
    chapters of an EPUB): the heading path carries over from one to the next."""

    def __init__(self, page: int | None = None) -> None:
        self.blocks: list[Block] = []
        self.page = page
        self.stack: list[tuple[int, str]] = []  # (level, heading) outermost first
        self._buf: list[str] = []
        self._kind: BlockKind = "paragraph"

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(text for _, text in self.stack)

    def walk(self, node: LexborNode) -> list[Block]:
        """``node``'s content as blocks (also appended to :attr:`blocks`). Iterative: a page
        of thousands of unclosed ``<div>`` s nests deeper than Python's recursion limit."""
        start = len(self.blocks)
        # (node, None) to read; (None, kind) ends a block element: flush, then that kind again
        todo: list[tuple[LexborNode | None, BlockKind | None]] = []
        self._push_children(node, todo)
        while todo:
            child, kind = todo.pop()
            if child is None:
                self._flush()
                self._kind = kind or self._kind
            else:
                self._visit(child, todo)
        self._flush()
        return self.blocks[start:]

    @staticmethod
    def _push_children(
        node: LexborNode, todo: list[tuple[LexborNode | None, BlockKind | None]]
    ) -> None:
        todo.extend((c, None) for c in reversed(list(node.iter(include_text=True))))

    def _flush(self) -> None:
        if self._buf:
            text = clean_text("".join(self._buf))
            self._buf.clear()
            if text:
                self.blocks.append(Block(text, self.page, self.path, self._kind))

    def _visit(
        self, child: LexborNode, todo: list[tuple[LexborNode | None, BlockKind | None]]
    ) -> None:
        tag = child.tag
        if tag == "-text":
            self._buf.append(_WHITESPACE.sub(" ", child.text_content or ""))
        elif tag is None or tag in SKIP:
            return
        elif tag == "br":
            self._buf.append("\n")
        elif tag in INLINE:
            self._push_children(child, todo)
        elif tag in HEADINGS:
            self._heading(HEADINGS[tag], child)
        elif tag == "pre":
            self._flush()
            self._add(clean_code(child.text(deep=True)), "code")
        elif tag == "table" and child.css_first(_LAYOUT_TABLE) is None:
            self._flush()
            self._table(child)
        else:  # a leaf (p, li, ...) of its kind, or a container (div, section, ul, ...)
            self._flush()
            todo.append((None, self._kind))
            self._kind = LEAVES.get(tag, self._kind)
            self._push_children(child, todo)

    def _add(self, text: str, kind: BlockKind) -> None:
        if text:
            self.blocks.append(Block(text, self.page, self.path, kind))

    def _heading(self, level: int, node: LexborNode) -> None:
        self._flush()
        text = clean_text(_WHITESPACE.sub(" ", node.text(deep=True, separator=" ")))
        if text:
            self.stack = [(lv, t) for lv, t in self.stack if lv < level] + [(level, text)]
            self._add(text, "heading")

    def _table(self, table: LexborNode) -> None:
        for part in table.css("caption"):
            self._add(_inline_text(part), "caption")
        rows, header = [], False
        for i, row in enumerate(table.css("tr")):
            cells = [c for c in row.iter() if c.tag in ("td", "th")]
            if i == 0:  # a header row: in <thead>, or all <th>
                parent = row.parent
                in_head = parent is not None and parent.tag == "thead"
                header = bool(cells) and (in_head or all(c.tag == "th" for c in cells))
            rows.append(" | ".join(t for t in map(_inline_text, cells) if t))
        self.blocks += table_blocks(rows, self.page, self.path, header=header)


def _inline_text(node: LexborNode) -> str:
    return clean_text(_WHITESPACE.sub(" ", node.text(deep=True, separator=" ")))


def parse_html(data: bytes) -> LexborHTMLParser:
    """``data`` parsed, its encoding found as the module says."""
    declared = data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")) or (
        b"charset" in data[:1024].lower()
    )
    if declared:
        return LexborHTMLParser(data, encoding=True)
    try:
        return LexborHTMLParser(data.decode("utf-8"))
    except UnicodeDecodeError:
        return LexborHTMLParser(data.decode("cp1252", errors="replace"))


def content_root(tree: LexborHTMLParser) -> LexborNode | None:
    """The element that holds the page's content (the module's step 2)."""
    for selector in ("main", "[role=main]"):
        node = tree.css_first(selector)
        if node is not None:
            return node
    articles = tree.css("article")
    if len(articles) == 1:
        return articles[0]
    return tree.body or tree.root


def page_title(tree: LexborHTMLParser) -> str | None:
    """The title (the module's last paragraph); read before ``<head>`` goes."""
    # the document's <title>, not an SVG icon's
    node = next((t for t in tree.css("title") if t.parent is None or t.parent.tag != "svg"), None)
    title = clean_text(node.text(), join_lines=True) if node is not None else ""
    h1_node = tree.css_first("h1")
    h1 = _inline_text(h1_node) if h1_node is not None else ""
    if not title:
        return h1 or None
    seps = list(_TITLE_SEPARATOR.finditer(title))
    if not seps:
        return title
    site = ""
    for selector in ('meta[property="og:site_name"]', 'meta[name="application-name"]'):
        meta = tree.css_first(selector)
        if meta is not None and not site:
            site = clean_text(meta.attributes.get("content") or "", join_lines=True)
    # "Article | Site" or "Site | Article"
    for rest, cut in (
        (title[: seps[-1].start()], title[seps[-1].end() :]),
        (title[seps[0].end() :], title[: seps[0].start()]),
    ):
        if site and cut.casefold() == site.casefold():
            return rest
        if h1 and rest.casefold() == h1.casefold():
            return rest
    return title


def content_blocks(tree: LexborHTMLParser, *, boilerplate: bool = True) -> list[Block]:
    """The page's content blocks (the module's steps 1-3); the tree is changed."""
    strip_never_text(tree)
    root = content_root(tree)
    if root is None:
        return []
    if boilerplate:
        strip_boilerplate(root)
    return BlockWalker().walk(root)


def read_html(data: bytes, limits: ParseLimits) -> ParsedDocument:
    """``data`` (an HTML or XHTML page) as blocks (no pages); see the module."""
    try:
        tree = parse_html(data)
        title = page_title(tree)
        blocks = content_blocks(tree)
        if not blocks:  # all of it looked like boilerplate: read it without those rules
            blocks = content_blocks(parse_html(data), boilerplate=False)
    except (ParseError, MemoryError):
        raise
    except Exception as e:
        raise ParseError(ErrorCode.CORRUPT, f"not a readable HTML page: {one_line(str(e))}") from e
    mime = "application/xhtml+xml" if _is_xhtml(data) else "text/html"
    return ParsedDocument(mime, title, blocks, None)


def _is_xhtml(data: bytes) -> bool:
    head = data[:2048].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith(b"<?xml") and b"http://www.w3.org/1999/xhtml" in head
