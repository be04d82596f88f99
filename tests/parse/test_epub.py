"""The EPUB reader on books assembled with zipfile: spine order, headings, TOC titles."""

from __future__ import annotations

import io
import zipfile

import pytest

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.formats.epub import read_epub
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.readers import read_document
from tests.parse.made_files import epub_file, leftover_markup

LIMITS = ParseLimits()
CHAPTERS = [
    ("Part One", "<h1>Part One</h1><p>The part begins.</p>"),
    ("Chapter 1", "<h2>Chapter 1</h2><p>Text &amp; more.</p><script>var x = 1;</script>"),
    ("Interlude", "<p>A chapter file without a heading.</p>"),
    ("Chapter 2", "<h1>Chapter 2</h1><h2>A section</h2><p>Deep text.</p>"),
]


def test_spine_order_and_heading_paths():
    doc = read_epub(epub_file(CHAPTERS, title="The Book"), LIMITS)
    assert doc.title == "The Book" and doc.pages is None
    got = [(b.kind, b.headings, b.text) for b in doc.blocks]
    assert got == [
        ("heading", ("Part One",), "Part One"),
        ("paragraph", ("Part One",), "The part begins."),
        ("heading", ("Part One", "Chapter 1"), "Chapter 1"),
        ("paragraph", ("Part One", "Chapter 1"), "Text & more."),
        ("paragraph", ("Interlude",), "A chapter file without a heading."),  # its TOC title
        ("heading", ("Chapter 2",), "Chapter 2"),
        ("heading", ("Chapter 2", "A section"), "A section"),
        ("paragraph", ("Chapter 2", "A section"), "Deep text."),
    ]
    assert leftover_markup([b.text for b in doc.blocks]) == []


def test_the_navigation_document_is_not_read_even_in_the_spine():
    doc = read_epub(epub_file(CHAPTERS, nav_in_spine=True), LIMITS)
    assert len(doc.blocks) == 8 and doc.blocks[0].text == "Part One"


def test_an_epub_2_table_of_contents_names_a_chapter_without_a_heading():
    doc = read_epub(epub_file(CHAPTERS, ncx=True), LIMITS)
    (block,) = [b for b in doc.blocks if b.text.startswith("A chapter file without")]
    assert block.headings == ("Interlude",)


def test_read_document_sniffs_an_epub():
    assert read_document(epub_file(CHAPTERS), "book.zip").mime == "application/epub+zip"


def _without(data: bytes, member: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if info.filename != member:
                dst.writestr(info, src.read(info))
    return out.getvalue()


def test_without_a_container_the_package_is_found():
    book = _without(epub_file(CHAPTERS), "META-INF/container.xml")
    assert len(read_epub(book, LIMITS).blocks) == 8


@pytest.mark.parametrize(
    "data",
    [_without(epub_file(CHAPTERS), "OEBPS/content.opf"), epub_file(CHAPTERS)[:-400], b""],
    ids=["no-package", "truncated", "empty"],
)
def test_unreadable_books_are_corrupt(data: bytes):
    with pytest.raises(ParseError) as info:
        read_epub(data, LIMITS)
    assert info.value.code == ErrorCode.CORRUPT
