"""A file's type from its bytes: :func:`sniff` never believes the name over the content.

The standard library only: the client sniffs the files of a folder before it sends any (what
is not a document is skipped and named), and a worker's parse stage sniffs again to choose its
reader (``worker/parse/readers.py``).

A ``.pdf`` that holds HTML is HTML; a file without an extension is still a PDF if it starts
with ``%PDF-``. The name only breaks ties between kinds of text (Markdown, CSS, JavaScript,
JSON, plain text), and names the type of an empty file (an empty ``report.docx`` is a broken
DOCX, not an empty text). The checks, in order:

1. ``%PDF-`` within the first 1024 bytes (PDF readers allow leading junk);
2. a zip: its member names say EPUB, DOCX or PPTX (from the local headers when the central
   directory is missing, as in a truncated file), else a plain zip;
3. magic numbers of images, archives, fonts, audio/video and legacy Office files;
4. markup: HTML (a doctype, ``<html>``, ``<head>``, ``<body>``, ``<title>`` first after a BOM,
   whitespace and comments, or an HTML fragment that is not Markdown), XHTML (``<?xml`` then
   ``<html>`` in the XHTML namespace), SVG, other XML;
5. NUL bytes in the first 8 KiB (and no UTF-16 BOM): a binary file;
6. text: the name's ``.css``/``.js``/``.json``/``.txt``; Markdown by name or by content (ATX
   headings, setext underlines; not a ``#!`` script); else plain text (in any 8-bit encoding:
   the text reader decodes it).
"""

from __future__ import annotations

import io
import re
import zipfile

PDF = "application/pdf"
HTML = "text/html"
XHTML = "application/xhtml+xml"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
EPUB = "application/epub+zip"
MARKDOWN = "text/markdown"
TEXT = "text/plain"
BINARY = "application/octet-stream"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"

_HEAD = 8192  # bytes looked at for markup, NULs and text features
_XHTML_NS = "http://www.w3.org/1999/xhtml"

# (offset, magic, mime): checked in order, first match wins
_MAGIC: list[tuple[int, bytes, str]] = [
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (0, b"II*\x00", "image/tiff"),
    (0, b"MM\x00*", "image/tiff"),
    (0, b"\x00\x00\x01\x00", "image/vnd.microsoft.icon"),
    (0, b"\x1f\x8b", "application/gzip"),
    (0, b"\xfd7zXZ\x00", "application/x-xz"),
    (0, b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (0, b"Rar!\x1a\x07", "application/vnd.rar"),
    (0, b"\x28\xb5\x2f\xfd", "application/zstd"),
    (257, b"ustar", "application/x-tar"),
    (0, b"wOFF", "font/woff"),
    (0, b"wOF2", "font/woff2"),
    (0, b"OTTO", "font/otf"),
    (0, b"\x00\x01\x00\x00\x00", "font/ttf"),
    (0, b"true\x00", "font/ttf"),
    (0, b"OggS\x00", "audio/ogg"),
    (0, b"fLaC", "audio/flac"),
    (0, b"\x1aE\xdf\xa3", "video/webm"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),
    (0, b"{\\rtf", "application/rtf"),
    (0, b"%!PS", "application/postscript"),
]
_RIFF = {b"WEBP": "image/webp", b"WAVE": "audio/wav", b"AVI ": "video/x-msvideo"}
_FTYP = {b"avif": "image/avif", b"avis": "image/avif", b"heic": "image/heic",
         b"heix": "image/heic", b"mif1": "image/heic", b"qt  ": "video/quicktime",
         b"M4A ": "audio/mp4"}  # fmt: skip

_NAMED_TEXT = {".css": "text/css", ".js": "text/javascript", ".mjs": "text/javascript",
               ".cjs": "text/javascript", ".json": "application/json", ".txt": TEXT,
               ".md": MARKDOWN, ".markdown": MARKDOWN, ".mdown": MARKDOWN}  # fmt: skip
# an empty file is the type its name says, for the document types (so it reads as broken)
_NAMED_DOCUMENT = {".pdf": PDF, ".docx": DOCX, ".pptx": PPTX, ".epub": EPUB, ".html": HTML,
                   ".htm": HTML, ".xhtml": XHTML, ".png": PNG, ".jpg": JPEG, ".jpeg": JPEG,
                   ".tif": TIFF, ".tiff": TIFF}  # fmt: skip

# what may come before the first tag: whitespace, comments, an XML declaration, a doctype
_PROLOG = re.compile(
    r"(?:\s+|<!--.*?-->|<\?xml[^>]*\?>|<!doctype(?!\s+html\b)[^>]*>)*", re.I | re.S
)
_HTML_START = re.compile(r"<(?:!doctype\s+html\b|html\b|head\b|body\b|title\b)", re.I)
_HTML_FRAGMENT = re.compile(
    r"<(?:meta|link|script|style|div|p|h[1-6]|table|a|b|br|iframe|font|span|section|article"
    r"|main|header|nav|ul|ol|form|img|base|!--)[\s/>]",
    re.I,
)
_HTML_TAG_SOON = re.compile(r"<(?:html|head|body|title)\b", re.I)
_XHTML_ROOT = re.compile(r"<html\b[^>]*xmlns\s*=\s*[\"']" + re.escape(_XHTML_NS), re.I)
_SVG_ROOT = re.compile(r"<svg\b", re.I)
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+\S", re.M)
_SETEXT = re.compile(r"^ {0,3}\S[^\n]*\n {0,3}(?:={3,}|-{3,})[ \t]*$", re.M)


def _suffix(name: str) -> str:
    base = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return "." + base.rsplit(".", 1)[-1] if "." in base else ""


def _zip_type(data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist())
            if "mimetype" in names:
                info = zf.getinfo("mimetype")
                if info.file_size < 100 and zf.read(info).strip() == b"application/epub+zip":
                    return EPUB
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, KeyError):
        # a broken zip: the local headers at its start still carry member names
        head = data[: 1 << 16]
        if b"mimetypeapplication/epub+zip" in head:
            return EPUB
        names = {"word/document.xml"} if b"word/" in head else set()
        names |= {"ppt/presentation.xml"} if b"ppt/" in head else set()
    if "word/document.xml" in names:
        return DOCX
    if "ppt/presentation.xml" in names:
        return PPTX
    return "application/zip"


def _magic(data: bytes) -> str | None:
    for offset, magic, mime in _MAGIC:
        if data.startswith(magic, offset):
            return mime
    if data[:4] == b"RIFF" and data[8:12] in _RIFF:
        return _RIFF[data[8:12]]
    if data[4:8] == b"ftyp":
        return _FTYP.get(data[8:12], "video/mp4")
    if data[:3] == b"BZh" and data[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return "application/x-bzip2"
    if data[:3] == b"ID3" and len(data) > 4 and data[3] in (2, 3, 4) and data[4] == 0:
        return "audio/mpeg"
    if data[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
        return "audio/mpeg"
    dib_header = int.from_bytes(data[14:18], "little")  # BMP: reserved zeros, a known DIB size
    if data[:2] == b"BM" and data[6:10] == bytes(4) and dib_header in (12, 40, 56, 108, 124):
        return "image/bmp"
    return None


def _decode_head(data: bytes) -> str:
    """The start of the file as text, for looking at markup and text features."""
    head = data[:_HEAD]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec = "utf-16-le" if head[0] == 0xFF else "utf-16-be"
        return head[2:].decode(codec, errors="replace").lstrip("\ufeff")
    return head.decode("utf-8", errors="replace").lstrip("\ufeff")


def _markup(text: str) -> str | None:
    prolog = _PROLOG.match(text)
    start = text[prolog.end() :] if prolog else text
    if _HTML_START.match(start):
        if text.lstrip()[:5].lower() == "<?xml" and _XHTML_ROOT.search(start[:2048]):
            return XHTML
        return HTML
    if _SVG_ROOT.match(start):
        return "image/svg+xml"
    if text.lstrip()[:5].lower() == "<?xml":
        return "application/xml"
    if _HTML_FRAGMENT.match(start) and _HTML_TAG_SOON.search(start[:1024]):
        return HTML
    return None


def _text_type(text: str, name: str) -> str:
    named = _NAMED_TEXT.get(_suffix(name))
    if named is not None:
        return named
    if not text.startswith("#!") and (_ATX.search(text) or _SETEXT.search(text)):
        return MARKDOWN
    if _HTML_FRAGMENT.match(text.lstrip()):
        return HTML  # markup that is not Markdown: read as HTML, or the tags would be text
    return TEXT


def sniff(data: bytes, name: str = "") -> str:
    """The MIME type of ``data``, from its content (``name`` breaks ties between text types
    and types an empty file). See the module's docstring for the order of the checks."""
    if not data[:_HEAD].strip() and not data.strip():
        return _NAMED_DOCUMENT.get(_suffix(name), TEXT)
    if b"%PDF-" in data[:1024]:
        return PDF
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _zip_type(data)
    magic = _magic(data)
    if magic is not None:
        return magic
    utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))
    if not utf16 and b"\x00" in data[:_HEAD]:
        return BINARY
    head = _decode_head(data)
    return _markup(head) or _text_type(head, name)


# the types the parse stage has a reader for (worker/parse/readers.py: READERS, one per type);
# images (scans, photographed pages) are read by OCR, where a worker has it
DOCUMENT_TYPES = frozenset({PDF, HTML, XHTML, DOCX, PPTX, EPUB, MARKDOWN, TEXT, PNG, JPEG, TIFF})


def is_document(mime: str) -> bool:
    """True for the types the parse stage reads (:data:`DOCUMENT_TYPES`)."""
    return mime in DOCUMENT_TYPES


_NAMES = {
    PDF: "a PDF", HTML: "an HTML page", XHTML: "an XHTML page", DOCX: "a DOCX file",
    PPTX: "a PPTX file", EPUB: "an EPUB book", MARKDOWN: "a Markdown file",
    TEXT: "a plain text file", BINARY: "a binary file", "application/zip": "a zip archive",
    "text/css": "a stylesheet", "text/javascript": "a script", "application/json": "a JSON file",
    "application/xml": "an XML file", "image/svg+xml": "an SVG image",
    "image/png": "a PNG image", "image/jpeg": "a JPEG image", "image/gif": "a GIF image",
    "image/webp": "a WebP image", "image/bmp": "a BMP image", "image/tiff": "a TIFF image",
    "image/vnd.microsoft.icon": "an icon", "image/avif": "an AVIF image",
    "image/heic": "a HEIC image", "application/gzip": "a gzip archive",
    "application/x-bzip2": "a bzip2 archive", "application/x-xz": "an xz archive",
    "application/x-7z-compressed": "a 7z archive", "application/vnd.rar": "a RAR archive",
    "application/x-tar": "a tar archive", "application/zstd": "a zstd archive",
    "font/woff": "a font", "font/woff2": "a font", "font/otf": "a font", "font/ttf": "a font",
    "audio/mpeg": "an MP3 file", "audio/ogg": "an Ogg file", "audio/wav": "a WAV file",
    "audio/flac": "a FLAC file", "audio/mp4": "an audio file", "video/mp4": "an MP4 video",
    "video/quicktime": "a QuickTime video", "video/webm": "a WebM video",
    "video/x-msvideo": "an AVI video", "application/rtf": "an RTF file",
    "application/postscript": "a PostScript file",
    "application/x-ole-storage": "a legacy Office file (.doc, .xls or .ppt)",
}  # fmt: skip
_FAMILY = {"image": "an image", "audio": "an audio file", "video": "a video", "font": "a font",
           "text": "a text file"}  # fmt: skip


def describe(mime: str) -> str:
    """A short human name of a type, with its article: ``"a PDF"``, ``"a PNG image"``."""
    if mime in _NAMES:
        return _NAMES[mime]
    return _FAMILY.get(mime.split("/", 1)[0], f"a file of type {mime}")
