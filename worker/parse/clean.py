"""Text clean-up shared by the readers: what a block's text goes through before it is kept.

Pure functions over ``str``, each a few regex passes or one ``str.translate`` (no per-character
Python loop), so a reader can run them on every paragraph of a 1,000-page file.

:func:`clean_text` is the whole pipeline for prose, in this order:

1. line breaks: ``\\r\\n``, ``\\r``, form and line feeds, U+2028/U+2029 become ``\\n``;
2. ligatures (``ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ``, the Armenian ones, ``Ĳ``, ``Ǆ``/``ǅ``/``ǆ``, ``Ǉ``..``ǌ``,
   ``Ǳ``..``ǳ``) become their letters: NFKC of those characters alone, since NFKC of the whole
   text would also rewrite ``²``, ``½``, full-width forms and the like;
3. soft hyphens (U+00AD; at a line end the word goes on on the next line) and invisible
   characters (zero-width space, BOM, word joiner, the non-character U+FFFE) are removed;
4. control characters other than ``\\n`` and ``\\t`` are dropped (C0, DEL, C1);
5. exotic spaces (no-break, en/em, thin, ideographic, ...) become a space, runs of spaces
   become one, spaces at line starts and ends go;
6. a hyphen that ends a line between two letters is a word broken by the layout:
   ``"infor-\\nmation"`` becomes ``"information"``. When the next line starts with an
   upper-case letter or a digit the hyphen is real (``"Jean-\\nPaul"``, ``"COVID-\\n19"``): it
   stays and the lines are joined without a space (``"Jean-Paul"``). Lower-case compounds
   broken at their own hyphen (``"well-\\nknown"``) lose it: telling them apart needs a
   dictionary, and a search index is less hurt by ``"wellknown"`` than by ``"infor- mation"``;
7. with ``join_lines``, the lines of a paragraph are joined with single spaces (for formats
   whose line breaks are layout, such as PDF); without it, line breaks stay as they are.

:func:`clean_code` does only steps 1-4 (code keeps its spaces, hyphens and lines).
"""

from __future__ import annotations

import re
import unicodedata

_LIGATURE_CODEPOINTS = [
    *range(0xFB00, 0xFB07),  # ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ
    *range(0xFB13, 0xFB18),  # Armenian ligatures
    0x0132,  # Ĳ
    0x0133,  # ĳ
    *range(0x01C4, 0x01CD),  # Ǆ ǅ ǆ Ǉ ǈ ǉ Ǌ ǋ ǌ
    *range(0x01F1, 0x01F4),  # Ǳ ǲ ǳ
]
_LIGATURES = {cp: unicodedata.normalize("NFKC", chr(cp)) for cp in _LIGATURE_CODEPOINTS}
_BREAKS = dict.fromkeys(map(ord, "\f\v\x85\u2028\u2029"), "\n")
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\ufffe\u200b\ufeff\u2060"), None)
_CONTROLS = dict.fromkeys([*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)], None)
_EXOTIC_SPACES = dict.fromkeys(
    map(ord, "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
             "\u200a\u202f\u205f\u3000"), " "
)  # fmt: skip
# one pass for rules 1-4 and the first half of 5 (later entries win: \x85 is a line break)
_TABLE = {**_CONTROLS, **_INVISIBLE, **_LIGATURES, **_BREAKS, **_EXOTIC_SPACES}
_CODE_TABLE = {**_CONTROLS, **_INVISIBLE, **_LIGATURES, **_BREAKS}

# a soft hyphen that ends a line: the word goes on on the next line
_SOFT_BREAK = re.compile(r"\u00ad[ \t]*[\n\r\f\v\x85\u2028\u2029]+[ \t]*")
_LETTER = r"[^\W\d_]"
_HYPHEN_BREAK = re.compile(rf"(?<={_LETTER})[-\u2010][ \t]*\n[ \t]*(?={_LETTER}|\d)")
_RUNS_OF_SPACES = re.compile(r"  +")
_LINE_EDGES = re.compile(r" *\n *")
_LINE_BREAKS = re.compile(r"\s*\n\s*")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _basic(text: str) -> str:
    """Rules 1-4 and exotic spaces as spaces, in one ``str.translate`` (skipped for the common
    case: ASCII text without control characters)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.isascii():
        return text.translate(_TABLE) if _ASCII_CONTROL.search(text) else text
    if "\u00ad" in text:
        text = _SOFT_BREAK.sub("", text)
    return text.translate(_TABLE)


def _join_hyphen(m: re.Match[str]) -> str:
    nxt = m.string[m.end()]
    return "-" if nxt.isupper() or nxt.isdigit() else ""


def collapse_spaces(text: str) -> str:
    """Runs of spaces as one space; none at line starts and ends, none around the text. Tabs
    and line breaks stay. (Expects exotic spaces already made spaces, as :func:`_basic` does.)"""
    if "  " in text:
        text = _RUNS_OF_SPACES.sub(" ", text)
    if " \n" in text or "\n " in text:
        text = _LINE_EDGES.sub("\n", text)
    return text.strip(" ")


def join_lines(text: str) -> str:
    """A paragraph's lines joined with single spaces."""
    return _LINE_BREAKS.sub(" ", text) if "\n" in text else text


def clean_code(text: str) -> str:
    """Code or preformatted text: line breaks, ligatures and invisible characters only; its
    spaces, indentation and lines are kept. Blank lines around it go."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.translate(_CODE_TABLE)
    return text.strip("\n").rstrip()


def clean_text(text: str, *, join_lines: bool = False) -> str:
    """Prose as a block keeps it (the module's rules 1-7). Idempotent."""
    text = collapse_spaces(_basic(text))
    if "\n" in text:
        if "-\n" in text or "-\t" in text or "\u2010" in text:
            text = _HYPHEN_BREAK.sub(_join_hyphen, text)
        if join_lines:
            if "\t" in text or "\n\n" in text:
                text = _LINE_BREAKS.sub(" ", text)
            else:  # no spaces around line breaks left: the common case, without a regex
                text = text.replace("\n", " ")
    return text.strip()


def one_line(text: str, limit: int = 200) -> str:
    """The first line of ``text`` (an exception's message), at most ``limit`` characters: what
    a :class:`~poolq.worker.parse.errors.ParseError` says about a library's failure."""
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"
