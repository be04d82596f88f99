"""PDF reader (pypdfium2): the text layer of each page as paragraph blocks, with the outline.

Pages are read one at a time and closed at once (a 1,000-page file never has two pages open);
what is kept of a page is its lines: text, baseline and height (one text extraction of the
page plus one pdfium call a line, so the reader costs little more than the extraction).

- Paragraphs: a line starts a new block when the gap above it is over 1.3 times the
  document's usual line gap (the lower quartile of the gaps between lines, in line heights,
  at most 1.6: double-spaced text stays whole, one-line paragraphs still split), when the
  font size changes by over 15% (a heading), or when it sits above the line before it (a
  new column or box). Within a block, lines are joined with spaces, words hyphenated at a
  line end are joined (pdfium marks such hyphens; ``clean.py`` decides), ligatures become
  letters.
- Page chrome (page numbers, running headers and footers) is dropped first: ``pdf_chrome.py``.
- Headings: from the outline (bookmarks). A bookmark's destination page starts its section;
  nested bookmarks give the path. On that page the path changes at the block whose text is
  the bookmark's title (that block becomes the heading), or at the page's start if none is.
- Title: the metadata's Title (not a placeholder such as "untitled"), else the first
  bookmark's, else None.

A password-protected file is ``ENCRYPTED``; one pdfium cannot load, ``CORRUPT`` (a page that
does not load is an empty page, unless none loads; a broken outline or metadata is ignored).
A page with no usable text layer (``pdf_scan.py`` says which) is listed in ``unread`` with its
heading path, for the OCR pass; a PDF with no text at all and OCR off or not installed is
``NO_TEXT`` (``ocr_pass.py``).
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.blocks import Block, BlockKind, ParsedDocument
from poolq.worker.parse.clean import clean_text, one_line
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.formats.pdf_chrome import Line, drop_chrome
from poolq.worker.parse.formats.pdf_scan import sparse_over_images, unusable_text
from poolq.worker.parse.limits import ParseLimits

MIME = "application/pdf"
PARAGRAPH_GAP = 1.3  # times the usual line gap: a paragraph break
MAX_LINE_GAP = 1.6  # line heights: a usual gap above this is taken as this
GAP_SAMPLE = 1000  # line gaps looked at to find the usual one
FONT_CHANGE = 0.15  # relative change of font size that starts a new block
MAX_BOOKMARKS = 10_000

_PLACEHOLDER_TITLE = re.compile(
    r"untitled(?: document)?|unknown|no title|none|microsoft (?:word|powerpoint|excel) - .*", re.I
)
_NOT_WORD = re.compile(r"[\W_]+")


@dataclass(frozen=True)
class Bookmark:
    page: int  # 0-based page index
    level: int
    title: str


def read_pdf(data: bytes, limits: ParseLimits) -> ParsedDocument:
    """``data`` (a PDF file) as blocks with 1-based page numbers and outline headings."""
    pdf = _open(data)
    try:
        pages = len(pdf)
        if pages == 0:
            raise ParseError(ErrorCode.CORRUPT, "not a readable PDF: it has no pages")
        title, marks = _metadata_title(pdf), _outline(pdf, pages)
        lines: list[list[Line]] = []
        unread: list[int] = []  # 0-based
        broken = 0
        for i in range(pages):
            try:
                page_lines, usable = _page_lines(pdf, i)
                lines.append(page_lines)
                if not usable:
                    unread.append(i)
            except pdfium.PdfiumError:  # one bad page costs its own text, not the file's
                lines.append([])
                broken += 1
        if broken == pages:
            raise ParseError(ErrorCode.CORRUPT, "not a readable PDF: none of its pages loads")
    except (ParseError, MemoryError):
        raise
    except Exception as e:
        raise ParseError(ErrorCode.CORRUPT, f"not a readable PDF: {one_line(str(e))}") from e
    finally:
        pdf.close()
    drop_chrome(lines)
    paths: dict[int, tuple[str, ...]] = dict.fromkeys(unread, ())
    blocks = _blocks(lines, marks, paths)
    return ParsedDocument(
        MIME, title or (marks[0].title if marks else None), blocks, pages,
        tuple((i + 1, paths[i]) for i in unread),
    )  # fmt: skip


def _open(data: bytes) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as e:
        if e.err_code == pdfium_c.FPDF_ERR_PASSWORD:
            raise ParseError(
                ErrorCode.ENCRYPTED, "the PDF is password-protected: send it without a password"
            ) from e
        if e.err_code == pdfium_c.FPDF_ERR_SECURITY:
            raise ParseError(
                ErrorCode.ENCRYPTED, "the PDF is encrypted with a scheme that cannot be opened"
            ) from e
        raise ParseError(ErrorCode.CORRUPT, f"not a readable PDF: {one_line(str(e))}") from e


def _metadata_title(pdf: pdfium.PdfDocument) -> str | None:
    """The Title entry, unless it is a placeholder ("untitled") or names an Office file's
    conversion ("Microsoft Word - report.docx")."""
    try:
        title = clean_text(pdf.get_metadata_dict().get("Title", ""), join_lines=True)
    except pdfium.PdfiumError:  # unreadable metadata is no reason to refuse the text
        return None
    if _PLACEHOLDER_TITLE.fullmatch(title):
        return None
    return title or None


def _outline(pdf: pdfium.PdfDocument, pages: int) -> list[Bookmark]:
    """Bookmarks with a destination page in the document, in outline order."""
    marks: list[Bookmark] = []
    try:
        for bm in pdf.get_toc():
            if len(marks) >= MAX_BOOKMARKS:
                break
            title = clean_text(bm.get_title() or "", join_lines=True)
            page = _bookmark_page(pdf, bm)
            if title and page is not None and 0 <= page < pages:
                marks.append(Bookmark(page, bm.level, title))
    except pdfium.PdfiumError:  # a broken outline: the bookmarks read so far
        pass
    return marks


def _bookmark_page(pdf: pdfium.PdfDocument, bm: pdfium.PdfBookmark) -> int | None:
    dest = bm.get_dest()
    if dest is not None:
        return int(dest.get_index())
    action = pdfium_c.FPDFBookmark_GetAction(bm)  # a GoTo action instead of a destination
    raw_dest = pdfium_c.FPDFAction_GetDest(pdf, action) if action else None
    index = pdfium_c.FPDFDest_GetDestPageIndex(pdf, raw_dest) if raw_dest else -1
    return index if index >= 0 else None


@functools.cache
def _loose_char_box() -> Callable[[int | None, int, Any], int]:
    """``FPDFText_GetLooseCharBox`` called through plain pointers: a third of the cost of the
    binding's typed call, which is most of what this reader adds to pdfium's own extraction."""
    address = ctypes.cast(pdfium_c.FPDFText_GetLooseCharBox, ctypes.c_void_p).value
    assert address is not None
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
    return proto(address)


def _page_lines(pdf: pdfium.PdfDocument, index: int) -> tuple[list[Line], bool]:
    """Page ``index``'s lines, each with the bottom and height of its first character's box,
    and whether its text layer is usable (``pdf_scan.py``)."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_range()
            usable = not unusable_text(text) and not sparse_over_images(page, text)
            if not text or text.isspace():
                return [], usable
            raw = textpage.raw
            address = ctypes.cast(raw, ctypes.c_void_p).value
            box = pdfium_c.FS_RECTF()
            pbox = ctypes.byref(box)
            loose_box = _loose_char_box()
            # text and character indices are the same unless pdfium left characters out
            same = pdfium_c.FPDFText_CountChars(raw) == len(text)
            char_index = pdfium_c.FPDFText_GetCharIndexFromTextIndex
            lines: list[Line] = []
            pos = 0
            for line in text.split("\r\n"):
                stripped = line.lstrip()
                if stripped:
                    at = pos + len(line) - len(stripped)
                    at = at if same else char_index(raw, at)
                    if at >= 0 and loose_box(address, at, pbox):
                        lines.append((line, box.bottom, box.top - box.bottom))
                    elif lines:  # no position: it goes with the line before
                        lines.append((line, lines[-1][1], lines[-1][2]))
                    else:
                        lines.append((line, 0.0, 0.0))
                pos += len(line) + 2
            return lines, usable
        finally:
            textpage.close()
    finally:
        page.close()


def _usual_gap(pages: list[list[Line]]) -> float:
    """The gap between two lines of a paragraph, in line heights: the lower quartile of the
    gaps between lines of one size (paragraph gaps may be most of them), at most
    :data:`MAX_LINE_GAP` (then a blank line still breaks where all paragraphs are one line).
    The first :data:`GAP_SAMPLE` gaps are enough: a document keeps its line spacing."""
    ratios: list[float] = []
    for p in pages:
        ratios += [
            (a[1] - b[1]) / a[2]
            for a, b in itertools.pairwise(p)
            if a[2] > 0 and a[2] == b[2] and 0 < a[1] - b[1] < 3 * a[2]
        ]
        if len(ratios) >= GAP_SAMPLE:
            break
    ratios.sort()
    return min(ratios[len(ratios) // 4], MAX_LINE_GAP) if ratios else 1.0


def _paragraphs(lines: list[Line], usual: float) -> list[str]:
    """The page's lines grouped into paragraphs (the module's rules), each joined by ``\\n``."""
    if not lines:
        return []
    out: list[str] = []
    current = [lines[0][0]]
    break_gap = PARAGRAPH_GAP * usual
    _, prev_y, prev_size = lines[0]
    for text, y, size in lines[1:]:
        big = prev_size if prev_size > size else size
        big = big or 1.0
        gap = (prev_y - y) / big
        if (
            gap > break_gap
            or gap < -0.5
            or (prev_size - size if prev_size > size else size - prev_size) > FONT_CHANGE * big
        ):
            out.append("\n".join(current))
            current = [text]
        else:
            current.append(text)
        prev_y, prev_size = y, size
    out.append("\n".join(current))
    return out


def _events(marks: list[Bookmark], texts: list[str]) -> list[tuple[int, Bookmark, bool]]:
    """Where on a page each of its bookmarks takes effect: ``(block index, bookmark, True)``
    at the block that is its title, else ``(index, bookmark, False)`` right after the block
    of the bookmark before it (the page's start for the first)."""
    if not marks:
        return []
    keys = [_NOT_WORD.sub("", t.casefold()) for t in texts]
    events, start = [], 0
    for mark in marks:
        key = _NOT_WORD.sub("", mark.title.casefold())
        hit = next((i for i in range(start, len(keys)) if key and keys[i] == key), None)
        events.append((start if hit is None else hit, mark, hit is not None))
        start = start if hit is None else hit + 1
    return events


def _blocks(
    pages: list[list[Line]], marks: list[Bookmark], paths: dict[int, tuple[str, ...]]
) -> list[Block]:
    """The pages' blocks; ``paths``' pages (0-based) get the heading path in effect there."""
    usual = _usual_gap(pages)
    by_page: dict[int, list[Bookmark]] = {}
    for m in marks:
        by_page.setdefault(m.page, []).append(m)
    path: tuple[str, ...] = ()
    blocks: list[Block] = []
    for index, lines in enumerate(pages):
        texts = [t for t in map(_clean, _paragraphs(lines, usual)) if t]
        events = _events(by_page.get(index, []), texts)
        e = 0
        for i in range(len(texts) + 1):
            heading = False
            while e < len(events) and events[e][0] == i:
                mark, heading = events[e][1], events[e][2]
                path = (*path[: mark.level], mark.title)
                e += 1
            if i < len(texts):
                kind: BlockKind = "heading" if heading else "paragraph"
                blocks.append(Block(texts[i], index + 1, path, kind))
        if index in paths:
            paths[index] = path
    return blocks


def _clean(text: str) -> str:
    # pdfium drops a hyphen at a line end and joins the lines, leaving U+FFFE: put the line end
    # back so that clean_text decides whether the hyphen was real
    return clean_text(text.replace("\ufffe", "-\n"), join_lines=True)
