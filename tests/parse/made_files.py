"""Real files made at test time, for the parse stage's tests (no binary fixtures in the tree).

Each builder returns the file's bytes. PDFs are drawn with reportlab (text in the Vera font that
ships with it, which has the ``ﬁ``/``ﬂ`` ligature glyphs), DOCX and PPTX are written by
python-docx and python-pptx, EPUBs and zip bombs are assembled with ``zipfile``/``zlib``
(in ``made_archives.py``; import them from here).

- :func:`pdf_pages`: pages of text lines, with an optional title, outline and password
- :func:`scanned_pdf`: pages with drawings and no text layer (what a scan looks like)
- :func:`truncated_pdf`: a PDF cut short (no cross-reference table, no trailer)
- :func:`docx_file`, :func:`pptx_file`, :func:`epub_file`: office documents and e-books
- :func:`html_page`: an article inside a page full of boilerplate (nav, cookie bar, footer, ...)
- :func:`zip_bomb`: a small DOCX-looking zip whose member inflates past a limit
- :func:`empty_docx`: a 0-byte ``.docx``
- :func:`leftover_markup`: the block texts that still hold markup (a check, not a builder)
"""

from __future__ import annotations

import io
import os
import re

from tests.parse.made_archives import epub_file as epub_file
from tests.parse.made_archives import zip_bomb as zip_bomb

# every builder's text is in Vera (reportlab ships it): it has ligature glyphs, Helvetica has not
_FONT = "Vera"
PAGE_TOP = 800.0
LEADING = 14.0  # one line's height on a made PDF page; "" in a page's lines leaves one blank


def _register_font() -> None:
    import reportlab
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    if _FONT not in pdfmetrics.getRegisteredFontNames():
        path = os.path.join(os.path.dirname(reportlab.__file__), "fonts", "Vera.ttf")
        pdfmetrics.registerFont(TTFont(_FONT, path))


def pdf_pages(
    pages: list[list[str]],
    *,
    title: str | None = None,
    outline: list[tuple[str, int, int]] | None = None,
    encrypt_password: str | None = None,
    font_size: float = 11.0,
) -> bytes:
    """A PDF with one page per item of ``pages``, each a list of text lines drawn from the top
    down; an empty string leaves a blank line (a paragraph break). A line starting with ``"# "``
    is drawn at twice the size, without the marker (a heading). ``title``: the metadata title.
    ``outline``: bookmarks as ``(title, page, level)`` in document order, ``page`` 1-based,
    ``level`` 0 for the top. ``encrypt_password``: needed to open the file (RC4, reportlab)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    _register_font()
    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, encrypt=encrypt_password, invariant=True)
    if title is not None:
        c.setTitle(title)
    marks = list(outline or [])
    for number, lines in enumerate(pages, start=1):
        for i, (mark_title, mark_page, level) in enumerate(marks):
            if mark_page == number:
                key = f"m{i}"
                c.bookmarkPage(key)
                c.addOutlineEntry(mark_title, key, level=level)
        y = PAGE_TOP
        for line in lines:
            if line.startswith("# "):
                y -= font_size  # room above a heading
                c.setFont(_FONT, font_size * 2)
                c.drawString(72, y, line[2:])
                y -= font_size * 2 + 6
                continue
            if line:
                c.setFont(_FONT, font_size)
                c.drawString(72, y, line)
            y -= LEADING
        c.showPage()
    c.save()
    return buf.getvalue()


def scanned_pdf(pages: int = 2) -> bytes:
    """A PDF whose pages hold only drawings (filled boxes standing for a scanned page image):
    pages, but no text layer."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4, invariant=True)
    for _ in range(pages):
        for row in range(40):
            c.setFillGray(0.2 + (row % 5) / 10)
            c.rect(72, 780 - row * 16, 300 + (row * 37) % 150, 9, stroke=0, fill=1)
        c.showPage()
    c.save()
    return buf.getvalue()


def truncated_pdf() -> bytes:
    """The first 60% of a three-page PDF: no cross-reference table, no trailer."""
    data = pdf_pages([["A page that is cut off."]] * 3)
    return data[: len(data) * 6 // 10]


def docx_file(
    body: list[str | tuple[str, str] | list[list[str]]], *, title: str | None = None
) -> bytes:
    """A DOCX whose body is ``body`` in order: a ``str`` is a Normal paragraph, ``(style, text)``
    a paragraph in that style (``"Title"``, ``"Heading 1"``, ``"List Bullet"``, ...), a list of
    rows (each a list of cell texts) a table. ``title``: the core properties' title."""
    import docx

    doc = docx.Document()
    if title is not None:
        doc.core_properties.title = title
    for item in body:
        if isinstance(item, str):
            doc.add_paragraph(item)
        elif isinstance(item, tuple):
            style, text = item
            doc.add_paragraph(text, style=style)
        else:
            table = doc.add_table(rows=len(item), cols=max(len(r) for r in item))
            for row, cells in zip(table.rows, item, strict=True):
                for cell, text in zip(row.cells, cells, strict=False):
                    cell.text = text
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def empty_docx() -> bytes:
    """A 0-byte ``.docx`` (what an interrupted upload leaves)."""
    return b""


def pptx_file(
    slides: list[tuple[str, list[str]]],
    *,
    title: str | None = None,
    notes: list[str | None] | None = None,
    tables: dict[int, list[list[str]]] | None = None,
) -> bytes:
    """A PPTX with one "Title and Content" slide per ``(title, lines)`` item: the title in the
    title placeholder, each line a paragraph of the body. ``notes[i]``: speaker notes of slide
    ``i + 1``; ``tables[n]``: rows of cell texts for a table on slide ``n`` (1-based).
    ``title``: the core properties' title."""
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    if title is not None:
        prs.core_properties.title = title
    layout = prs.slide_layouts[1]
    for number, (slide_title, lines) in enumerate(slides, start=1):
        slide = prs.slides.add_slide(layout)
        if slide.shapes.title is not None:
            slide.shapes.title.text = slide_title
        body = slide.placeholders[1].text_frame
        for i, line in enumerate(lines):
            para = body.paragraphs[0] if i == 0 else body.add_paragraph()
            para.text = line
        rows = (tables or {}).get(number)
        if rows:
            cols = max(len(r) for r in rows)
            shape = slide.shapes.add_table(
                len(rows), cols, Inches(1), Inches(5), Inches(6), Inches(1.5)
            )
            for r, cells in enumerate(rows):
                for col, text in enumerate(cells):
                    shape.table.cell(r, col).text = text
        note = (notes or [])[number - 1] if notes and number <= len(notes) else None
        if note:
            slide.notes_slide.notes_text_frame.text = note
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


# what html_page puts around the article: none of this text may reach a block
BOILERPLATE_TEXTS = (
    "Home Products Pricing",
    "We use cookies",
    "Accept all cookies",
    "Related articles",
    "Share on Twitter",
    "Copyright Example Corp",
    "Subscribe to our newsletter",
    "Skip to content",
    "Next post",
)


def html_page(
    body: str, *, title: str = "A Page", site: str = "Example Site", encoding: str = "utf-8"
) -> bytes:
    """An HTML page with ``body`` (markup) as its ``<article>`` inside ``<main>``, surrounded by
    a skip link, a site header with navigation, a cookie bar, a sidebar, share buttons, a
    footer, inline CSS and JavaScript (texts in :data:`BOILERPLATE_TEXTS`). The ``<title>`` is
    ``"{title} | {site}"`` and ``og:site_name`` names the site. ``encoding``: of the bytes, also
    declared in ``<meta charset>``."""
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="{encoding}">
<title>{title} | {site}</title>
<meta property="og:site_name" content="{site}">
<style>body {{ font-family: sans-serif; }} .cookie-bar {{ position: fixed; }}</style>
<script>function track() {{ var x = 1; return x; }} window.onload = track;</script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="site-header"><div class="logo">{site}</div>
  <nav><ul><li><a href="/">Home</a></li><li>Products</li><li>Pricing</li></ul></nav>
  <div class="nav-links">Home Products Pricing</div>
</header>
<div id="cookie-consent" class="cookie-bar">We use cookies to improve your experience.
  <button>Accept all cookies</button></div>
<div class="layout">
<main id="main">
<article>
{body}
<div class="share-buttons"><a href="#">Share on Twitter</a></div>
<nav class="post-navigation"><a rel="next" href="/next">Next post</a></nav>
</article>
<aside class="sidebar"><h3>Related articles</h3><ul><li>Other story</li></ul></aside>
</main>
</div>
<footer class="site-footer"><p>Copyright Example Corp 2024</p>
  <form><label>Subscribe to our newsletter</label><input type="email"></form></footer>
<noscript>Enable JavaScript</noscript>
<script type="application/ld+json">{{"@type": "Article"}}</script>
</body>
</html>"""
    return page.encode(encoding)


# what must never reach a block's text: tags, entities, CSS rules, JavaScript, Markdown markup
_LEFTOVER = re.compile(
    r"<[a-zA-Z/!?]|&(?:[a-zA-Z]+|#\d+|#x[0-9a-fA-F]+);|[{}]|function\s*\(|\*\*|\]\(|^#{1,6} ",
    re.M,
)


def leftover_markup(texts: list[str]) -> list[str]:
    """The texts (of blocks) that hold markup, entities, CSS or JavaScript: ``[]`` is good."""
    return [t for t in texts if _LEFTOVER.search(t)]
