"""The OCR pass: a parsed file's unread pages (scans, images) read by OCR and merged back.

``--ocr`` (``POOLQ_OCR``; ``ParseLimits.ocr``) says which pages are read:

- ``auto`` (the default): the pages without a usable text layer (``formats/pdf_scan.py``) and
  every page of an image file; a page with a good text layer is never OCR'd. On a worker
  without the ``ocr`` extra it reads none, and a file left without text is ``no_text`` with
  a message that names the extra;
- ``always``: every page, its text layer ignored (for files whose text layer is known to be
  wrong); it needs the extra;
- ``never``: none; ``no_text`` then names the setting.

Each page is its own unit of work: :func:`ocr_page` in whatever process runs it (a parse child
under the file's time and memory caps, a page at a time: ``sandbox.py``; or this process:
:func:`read_with_ocr`). A page that fails (past its time cap, too large, unreadable) is that
page's error in ``page_errors``, and the file's other pages land; :func:`finish` turns a file
left with no text at all into its error.
"""

from __future__ import annotations

from collections.abc import Iterable

from poolq.wire.records.codes import ErrorCode
from poolq.wire.sniff import PDF, describe
from poolq.worker.parse.blocks import Block, ParsedDocument
from poolq.worker.parse.clean import clean_text
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.formats.pdf_chrome import is_page_number
from poolq.worker.parse.limits import ParseLimits

OCR_MODES = ("auto", "never", "always")
ENGINE_SHARE = 0.9  # of a page's time cap, Tesseract's own deadline (the kill comes after)

PageWork = tuple[int, tuple[str, ...]]  # (1-based page, heading path there)


def check_mode(mode: str) -> str:
    if mode not in OCR_MODES:
        raise ValueError(f"ocr: expected one of {', '.join(OCR_MODES)}, got {mode!r}")
    return mode


def pages_to_ocr(doc: ParsedDocument, mode: str, missing: str | None) -> list[PageWork]:
    """The pages of ``doc`` to OCR under ``mode`` (``missing``: why this machine cannot)."""
    if mode == "never" or missing is not None or not doc.pages:
        return []
    if mode == "auto":
        return list(doc.unread)
    unread = dict(doc.unread)
    first: dict[int, tuple[str, ...]] = {}
    for b in doc.blocks:
        if b.page is not None:
            first.setdefault(b.page, b.headings)
    out: list[PageWork] = []
    path: tuple[str, ...] = ()
    for page in range(1, doc.pages + 1):
        path = unread.get(page, first.get(page, path))
        out.append((page, path))
    return out


def ocr_page(data: bytes, mime: str, work: PageWork, limits: ParseLimits) -> list[Block]:
    """Page ``work[0]`` of the file ``data`` read by OCR: its paragraphs as blocks (none when
    OCR finds no text). :class:`ParseError` for the page's problem."""
    import time

    from poolq.worker.parse import ocr_engine, page_images

    t0 = time.monotonic()
    page, headings = work
    if mime == PDF:
        image = page_images.pdf_page_image(data, page)
    else:
        image = page_images.image_page(data, page)
    left = limits.timeout_s * ENGINE_SHARE - (time.monotonic() - t0)
    paragraphs = ocr_engine.recognize(image, max(0.05, left))
    texts = [t for t in (clean_text(p, join_lines=True) for p in paragraphs) if t]
    texts = [t for t in texts if not is_page_number(t)]
    return [Block(t, page, headings) for t in texts]


def merge(
    doc: ParsedDocument,
    read: dict[int, list[Block]],
    errors: Iterable[tuple[int, ErrorCode, str]] = (),
) -> ParsedDocument:
    """``doc`` with the blocks of each page in ``read`` replaced by its OCR blocks."""
    if not read and not errors:
        return doc
    blocks: list[Block] = []
    by_page: dict[int | None, list[Block]] = {}
    for b in doc.blocks:
        by_page.setdefault(b.page if b.page not in read else -1, []).append(b)
    pages = sorted({*(p for p in by_page if p is not None and p > 0), *read})
    blocks += by_page.get(None, [])
    for p in pages:
        blocks += read[p] if p in read else by_page.get(p, [])
    return ParsedDocument(
        doc.mime, doc.title, blocks, doc.pages, doc.unread, tuple(sorted(read)),
        (*doc.page_errors, *((p, c.value, m) for p, c, m in errors)),
    )  # fmt: skip


def finish(doc: ParsedDocument, mode: str, missing: str | None) -> ParsedDocument:
    """``doc`` when it holds text, else its ``ParseError``: ``no_text`` naming why (OCR off,
    not installed, or it found nothing), or the code of the page that failed."""
    if any(b.text.strip() for b in doc.blocks):
        return doc
    if doc.page_errors and not doc.ocr_pages:
        page, code, message = doc.page_errors[0]
        raise ParseError(ErrorCode(code), f"page {page}: {message}" if doc.pages else message)
    pages = doc.pages or 0
    what = "pages" if pages != 1 else "page"
    if doc.ocr_pages:
        raise ParseError(ErrorCode.NO_TEXT, f"OCR found no text on its {pages} {what}")
    if not doc.unread:
        raise ParseError(ErrorCode.NO_TEXT, f"no text in it ({describe(doc.mime)})")
    if doc.mime == PDF:
        found = f"no text layer on any of its {pages} {what} (a scanned PDF?)"
    else:
        found = f"{describe(doc.mime)}: its text can only be read by OCR"
    if mode == "never":
        why = "OCR is off on this worker (--ocr never, POOLQ_OCR): --ocr auto reads such pages"
    else:
        why = missing or "OCR did not run"
    raise ParseError(ErrorCode.NO_TEXT, f"{found}, and {why}")


def read_with_ocr(doc: ParsedDocument, data: bytes, limits: ParseLimits) -> ParsedDocument:
    """``doc`` (read from ``data``) with its pages OCR'd here, one after another, then
    :func:`finish` ed: the parse stage in one process (``read_document``)."""
    from poolq.worker.parse.ocr_engine import missing

    why = missing()
    read: dict[int, list[Block]] = {}
    errors: list[tuple[int, ErrorCode, str]] = []
    for work in pages_to_ocr(doc, limits.ocr, why):
        try:
            read[work[0]] = ocr_page(data, doc.mime, work, limits)
        except ParseError as e:
            errors.append((work[0], e.code, e.message))
    return finish(merge(doc, read, errors), limits.ocr, why)
