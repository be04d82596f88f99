"""Plain text reader: paragraphs at blank lines, the text otherwise as it was written.

Decoding: UTF-8 (a BOM dropped), else UTF-16 or UTF-32 when a BOM says so, else Windows-1252
(which also reads Latin-1 text; its five unassigned bytes, and anything else, never fail:
they become U+FFFD). Lines keep their breaks (no reflow: a poem or an address stays as it
is); ``clean.clean_text`` still removes control characters, normalises ligatures and joins
words hyphenated at a line end. No title, no pages.
"""

from __future__ import annotations

import codecs
import re

from poolq.worker.parse.blocks import Block, ParsedDocument
from poolq.worker.parse.clean import clean_text
from poolq.worker.parse.limits import ParseLimits

MIME = "text/plain"
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE, whose BOM it starts with
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_BLANK_LINE = re.compile(r"\n\s*\n")


def decode_text(data: bytes) -> str:
    """``data`` as text (the module's decoding rules); never raises."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def paragraphs(text: str) -> list[str]:
    """``text`` split at blank lines, each part cleaned (line breaks kept); empty ones dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    parts = (clean_text(p) for p in _BLANK_LINE.split(text))
    return [p for p in parts if p]


def read_text(data: bytes, limits: ParseLimits) -> ParsedDocument:
    """``data`` (a plain text file) as paragraph blocks; see the module."""
    blocks = [Block(p) for p in paragraphs(decode_text(data))]
    return ParsedDocument(MIME, None, blocks, None)
