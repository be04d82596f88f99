"""sniff: a file's type from its bytes, the name only between kinds of text."""

from __future__ import annotations

import io
import zipfile

import pytest

from poolq.wire.records.codes import ErrorCode
from poolq.wire.sniff import describe, is_document, sniff
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.readers import READERS, read_document
from tests.parse.made_files import (
    docx_file,
    epub_file,
    html_page,
    pdf_pages,
    pptx_file,
    truncated_pdf,
    zip_bomb,
)

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(32)


def _zip(**members: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name.replace("__", "/"), data)
    return buf.getvalue()


def test_made_documents_are_what_they_are_whatever_their_name():
    assert sniff(pdf_pages([["x"]]), "") == "application/pdf"
    assert sniff(b"junk before the header\n" + pdf_pages([["x"]])) == "application/pdf"
    assert sniff(docx_file(["x"]), "notes.txt") == DOCX
    assert sniff(pptx_file([("t", ["x"])]), "deck") == PPTX
    assert sniff(epub_file([("c", "<p>x</p>")]), "book.zip") == "application/epub+zip"
    assert sniff(html_page("<p>x</p>"), "report.pdf") == "text/html"
    assert sniff(_zip(a__b=b"x"), "report.docx") == "application/zip"


def test_a_broken_zip_is_named_by_its_local_headers():
    assert sniff(docx_file(["x"])[:3000]) == DOCX
    assert sniff(zip_bomb(1 << 20)) == DOCX
    assert sniff(truncated_pdf()) == "application/pdf"


def test_markup():
    assert sniff(b"  <!-- c -->\n<!DOCTYPE html><p>x") == "text/html"
    assert sniff(b"\xef\xbb\xbf<HTML><body>x</body></HTML>") == "text/html"
    assert sniff(b"<head><title>t</title></head>") == "text/html"
    assert sniff("<!doctype html><p>é".encode("utf-16")) == "text/html"
    xhtml = b'<?xml version="1.0"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><body/></html>'
    assert sniff(xhtml) == "application/xhtml+xml"
    assert (
        sniff(b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>') == "image/svg+xml"
    )
    assert sniff(b'<?xml version="1.0"?><data><row/></data>') == "application/xml"
    assert sniff(b"<div><p>a fragment</p></div>") == "text/html"


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (PNG, "image/png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"GIF89a\x01\x00", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"BM\x36\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00\x00\x00", "image/bmp"),
        (b"II*\x00\x08\x00", "image/tiff"),
        (b"\x1f\x8b\x08\x00", "application/gzip"),
        (b"BZh91AY&SY", "application/x-bzip2"),
        (b"\xfd7zXZ\x00\x00", "application/x-xz"),
        (b"7z\xbc\xaf\x27\x1c\x00", "application/x-7z-compressed"),
        (b"Rar!\x1a\x07\x00", "application/vnd.rar"),
        (b"\x28\xb5\x2f\xfd\x00", "application/zstd"),
        (bytes(257) + b"ustar\x0000", "application/x-tar"),
        (b"wOF2\x00\x01", "font/woff2"),
        (b"ID3\x03\x00\x00\x00", "audio/mpeg"),
        (b"\x00\x00\x00\x18ftypmp42", "video/mp4"),
        (b"OggS\x00\x02", "audio/ogg"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt ", "audio/wav"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),
        (b"\x7fELF\x02\x01\x01\x00" + bytes(16), "application/octet-stream"),
        (b"<svg viewBox='0 0 1 1'></svg>", "image/svg+xml"),
    ],
)
def test_binary_types_by_magic(data: bytes, mime: str):
    assert sniff(data, "document.pdf") == mime
    # scans and photographed pages are documents (read by OCR); other images are not
    assert is_document(mime) == (mime in ("image/png", "image/jpeg", "image/tiff"))


def test_text_types():
    assert sniff(b"# Title\n\nbody") == "text/markdown"
    assert sniff(b"Title\n=====\n\nbody") == "text/markdown"
    assert sniff(b"just words", "notes.md") == "text/markdown"
    assert sniff(b"just words, no headings") == "text/plain"
    assert sniff(b"#!/bin/sh\n# a comment\necho hi") == "text/plain"
    assert sniff(b"body { color: red }", "site.css") == "text/css"
    assert sniff(b"function f() {}", "app.mjs") == "text/javascript"
    assert sniff(b'{"a": 1}', "data.json") == "application/json"
    assert sniff("café crème".encode("cp1252")) == "text/plain"
    assert sniff("# Titel\n\nText".encode("utf-16")) == "text/markdown"


def test_an_empty_file_is_the_type_its_name_says():
    assert sniff(b"", "report.docx") == DOCX
    assert sniff(b"", "") == "text/plain"


def test_documents_are_exactly_the_readers_types():
    for mime in READERS:
        assert is_document(mime)
    for mime in ("application/zip", "text/css", "image/gif", "application/octet-stream"):
        assert not is_document(mime)


def test_describe_names_types_with_their_article():
    assert describe("application/pdf") == "a PDF"
    assert describe("text/html") == "an HTML page"
    assert describe(DOCX) == "a DOCX file"
    assert describe("image/png") == "a PNG image"
    assert describe("application/zip") == "a zip archive"
    assert describe("text/css") == "a stylesheet"
    assert describe("application/octet-stream") == "a binary file"
    assert describe("image/x-unheard-of") == "an image"


def test_a_gif_is_unsupported_even_named_as_a_document():
    with pytest.raises(ParseError) as info:
        read_document(b"GIF89a\x01\x00" + bytes(32), "scan.pdf")
    assert info.value.code == ErrorCode.UNSUPPORTED
    assert "GIF image" in info.value.message


def test_an_empty_image_file_is_typed_by_its_name_and_corrupt():
    assert sniff(b"", "fax.tiff") == "image/tiff" and sniff(b"", "photo.JPG") == "image/jpeg"
    with pytest.raises(ParseError) as info:
        read_document(b"", "fax.tiff")
    assert info.value.code == ErrorCode.CORRUPT and "0 bytes" in info.value.message


def test_an_extensionless_file_is_read_by_its_content():
    doc = read_document(pdf_pages([["A report without a name."]]), "report")
    assert doc.mime == "application/pdf"
    assert doc.blocks[0].text == "A report without a name."
