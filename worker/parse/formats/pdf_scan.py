"""Which PDF pages have no usable text layer, and so go to OCR (``ocr_pass.py``).

A page is unread when its text layer is

- **empty**: no character but spaces (a scan, a photographed page);
- **unusable**: over :data:`MAX_BAD_SHARE` of its characters are U+FFFD, private-use or
  control characters (a font without a Unicode map gives such glyph codes);
- **a stamp on a scan**: fewer than :data:`SPARSE_CHARS` characters, with images covering
  :data:`IMAGE_COVER` or more of the page (a scanned page with a printed Bates number or
  a "page 3" stamp in its text layer).

Any other page has a good text layer and is never OCR'd under ``--ocr auto``.
"""

from __future__ import annotations

import re
from typing import Any

MAX_BAD_SHARE = 0.3
SPARSE_CHARS = 50
IMAGE_COVER = 0.5
_SPACE = re.compile(r"\s+")
# U+FFFD, the private-use areas, C0 and C1 controls (regex passes in C: every page is judged)
_BAD = re.compile("[\ufffd\ue000-\uf8ff\U000f0000-\U0010ffff\x00-\x1f\x7f-\x9f]")


def unusable_text(text: str) -> bool:
    """Whether a page's text layer ``text`` is empty or mostly unreadable characters."""
    if _BAD.search(text) is None:  # the usual page: one scan in C
        return not text or text.isspace()
    chars = _SPACE.sub("", text)
    if not chars:
        return True
    return len(_BAD.findall(chars)) > MAX_BAD_SHARE * len(chars)


def sparse_over_images(page: Any, text: str) -> bool:
    """Whether ``page`` (a pypdfium2 page) holds few characters over images covering much of it."""
    if len(text) >= 4 * SPARSE_CHARS or len(_SPACE.sub("", text)) >= SPARSE_CHARS:
        return False  # (a long text layer is no stamp: no need to count its characters)
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
