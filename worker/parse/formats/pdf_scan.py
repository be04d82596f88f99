"""Which PDF pages have no usable text layer, and so go to OCR (``ocr_pass.py``).

A page is unread when its text layer is

- **empty**: no character but spaces (a scan, a photographed page);
- **unusable**: over :data:`MAX_BAD_SHARE` of its characters are U+FFFD, private-use,
  unassigned or control characters (a font without a Unicode map gives such glyph codes);
- **a stamp on a scan**: fewer than :data:`SPARSE_CHARS` characters, with images covering
  :data:`IMAGE_COVER` or more of the page (a scanned page with a printed Bates number or
  a "page 3" stamp in its text layer).

Any other page has a good text layer and is never OCR'd under ``--ocr auto``.
"""

from __future__ import annotations

import unicodedata
from typing import Any

MAX_BAD_SHARE = 0.3
SPARSE_CHARS = 50
IMAGE_COVER = 0.5
_BAD_CATEGORIES = frozenset({"Co", "Cn", "Cs", "Cc"})


def unusable_text(text: str) -> bool:
    """Whether a page's text layer ``text`` is empty or mostly unreadable characters."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return True
    bad = sum(c == "\ufffd" or unicodedata.category(c) in _BAD_CATEGORIES for c in chars)
    return bad > MAX_BAD_SHARE * len(chars)


def sparse_over_images(page: Any, text: str) -> bool:
    """Whether ``page`` (a pypdfium2 page) holds few characters over images covering much of it."""
    if sum(not c.isspace() for c in text) >= SPARSE_CHARS:
        return False
    import pypdfium2.raw as pdfium_c

    width, height = page.get_size()
    area = max(1.0, width * height)
    covered = 0.0
    for obj in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=4):
        left, bottom, right, top = obj.get_pos()
        covered += max(0.0, min(right, width) - max(left, 0.0)) * max(
            0.0, min(top, height) - max(bottom, 0.0)
        )
        if covered >= IMAGE_COVER * area:
            return True
    return False
