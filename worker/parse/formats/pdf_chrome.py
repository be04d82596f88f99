"""Page chrome in a PDF's text: page numbers, running headers and footers.

Only the first and last two lines of a page are looked at (where chrome is). Such a line goes
when it is only a page number ("7", "- 7 -", "(7)", "Page 7 of 9", "p. 7", "vii"), or, in a
document of :data:`CHROME_MIN_PAGES` pages or more, when it repeats, compared without case,
spacing and numbers (so "Chapter 2 · page 14" repeats as "chapter # · page #"):

- on over :data:`CHROME_SHARE` of the pages (a document-wide header or footer);
- with a number, on :data:`CHAPTER_RUN` pages or more (a chapter's running head:
  "Chapter 11: Statistical models in R 67" on every page of that chapter);
- without one, on :data:`CHAPTER_RUN` pages or more and :data:`CHAPTER_SHARE` of the pages, in a
  document of :data:`CHAPTER_MIN_PAGES` pages or more (a chapter's title as its running head).
"""

from __future__ import annotations

import re
from collections import Counter

# text, bottom and height of its first character's box from the font's ascent and descent
# (the box moves with the baseline, and its height is the font size times a constant)
Line = tuple[str, float, float]

CHROME_SHARE = 0.5  # header/footer: on more than this share of the pages
CHROME_MIN_PAGES = 4
CHAPTER_RUN = 3  # a chapter's running head: on this many pages or more
CHAPTER_SHARE = 0.1
CHAPTER_MIN_PAGES = 20
# lower-case Roman numerals only (front matter: i, ii, iv, ...): "I" or "V" may be a heading
_ROMAN = r"(?-i:(?=[ivxlcdm])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3}))"
_PAGE_NUMBER = re.compile(
    rf"(?:page|p\.|seite|pagina|página)?\s*[-–—(\[]?\s*(?:\d{{1,5}}|{_ROMAN})\s*[-–—)\]]?"
    r"(?:\s*(?:of|/|von|de)\s*\d{1,5})?",
    re.I,
)
_DIGITS = re.compile(r"\d+")


def is_page_number(text: str) -> bool:
    """Whether ``text`` is only a page number ("7", "- 7 -", "Page 7 of 9", "vii")."""
    return _PAGE_NUMBER.fullmatch(text.strip()) is not None


def _chrome_key(text: str) -> str:
    """What a header/footer line has in common with its copies on other pages."""
    key = " ".join(text.casefold().split())
    return _DIGITS.sub("#", key) if _DIGITS.search(key) else key


def _repeats(key: str, n: int, pages: int) -> bool:
    """Whether a line seen at a page's edge on ``n`` of ``pages`` pages is chrome."""
    if n > CHROME_SHARE * pages:
        return True
    if "#" in key and n >= CHAPTER_RUN:
        return True
    return pages >= CHAPTER_MIN_PAGES and n >= max(CHAPTER_RUN, CHAPTER_SHARE * pages)


def drop_chrome(pages: list[list[Line]]) -> None:
    """Page numbers and repeated headers/footers out of ``pages`` (in place)."""
    edges = [sorted({0, 1, len(p) - 2, len(p) - 1} & set(range(len(p)))) for p in pages]
    keys = [{i: _chrome_key(p[i][0]) for i in idx} for p, idx in zip(pages, edges, strict=True)]
    repeated: set[str] = set()
    if len(pages) >= CHROME_MIN_PAGES:
        seen = Counter(key for page_keys in keys for key in set(page_keys.values()) if key)
        repeated = {k for k, n in seen.items() if _repeats(k, n, len(pages))}
    for p, idx, page_keys in zip(pages, edges, keys, strict=True):
        for i in reversed(idx):
            if page_keys[i] in repeated or is_page_number(p[i][0]):
                del p[i]
