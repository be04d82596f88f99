"""The PDF reader on PDFs drawn by reportlab: pages, paragraphs, outline paths, chrome, errors."""

from __future__ import annotations

import pytest

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.formats.pdf import read_pdf
from poolq.worker.parse.formats.pdf_chrome import drop_chrome
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.readers import read_document
from tests.parse.made_files import pdf_pages, scanned_pdf, truncated_pdf

LIMITS = ParseLimits()
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]


def _body(page: int) -> list[str]:
    """Two paragraphs of two lines, different on every page."""
    w = WORDS[page % len(WORDS)]
    return [
        f"The {w} paragraph of page {page} opens here and",
        f"goes on to a second line about {w}.",
        "",
        f"Another {w} paragraph, number two of page {page}.",
    ]


def _texts(data: bytes) -> list[str]:
    return [b.text for b in read_pdf(data, LIMITS).blocks]


def test_a_phrase_is_in_a_block_with_its_page():
    doc = read_pdf(pdf_pages([_body(p) for p in range(1, 6)]), LIMITS)
    assert doc.pages == 5 and doc.mime == "application/pdf"
    (block,) = [b for b in doc.blocks if "number two of page 3" in b.text]
    assert block.page == 3
    assert {b.page for b in doc.blocks} == {1, 2, 3, 4, 5}


def test_lines_join_into_paragraphs_split_at_blank_lines():
    texts = _texts(pdf_pages([_body(1)]))
    assert texts == [
        "The bravo paragraph of page 1 opens here and goes on to a second line about bravo.",
        "Another bravo paragraph, number two of page 1.",
    ]


def test_hyphenation_and_ligatures_are_undone():
    lines = ["An ﬁnal ﬂow of infor-", "mation retrieval by Jean-", "Paul in the COVID-", "19 era."]
    assert _texts(pdf_pages([lines])) == [
        "An final flow of information retrieval by Jean-Paul in the COVID-19 era."
    ]


def test_a_larger_heading_line_is_a_block_of_its_own():
    texts = _texts(pdf_pages([["# Results", "The results were clear", "and repeatable."]]))
    assert texts == ["Results", "The results were clear and repeatable."]


def test_the_outline_gives_heading_paths():
    pages = [_body(p) for p in range(1, 6)]
    pages[2] = ["# Methods", *_body(3)]
    outline = [("Introduction", 1, 0), ("Background", 2, 1), ("Methods", 3, 0), ("Setup", 4, 1)]
    doc = read_pdf(pdf_pages(pages, outline=outline), LIMITS)
    paths = {b.page: b.headings for b in doc.blocks if b.kind == "paragraph"}
    assert paths == {
        1: ("Introduction",),
        2: ("Introduction", "Background"),
        3: ("Methods",),
        4: ("Methods", "Setup"),
        5: ("Methods", "Setup"),
    }
    (heading,) = [b for b in doc.blocks if b.kind == "heading"]  # the bookmark's title on its page
    assert (heading.text, heading.page, heading.headings) == ("Methods", 3, ("Methods",))
    assert doc.title == "Introduction"  # no metadata title: the first bookmark's


def test_the_title_comes_from_the_metadata_and_placeholders_are_no_title():
    assert read_pdf(pdf_pages([_body(1)], title="Annual Report"), LIMITS).title == "Annual Report"
    assert read_pdf(pdf_pages([_body(1)]), LIMITS).title is None  # reportlab writes "untitled"


def test_page_numbers_and_running_headers_are_dropped():
    pages = [["ACME Corp - Annual Report 2024", "", *_body(p), "", f"- {p} -"] for p in range(1, 7)]
    pages[3][-1] = "Page 4 of 6"
    texts = _texts(pdf_pages(pages))
    assert len(texts) == 12
    assert not [t for t in texts if "ACME" in t or t.startswith(("-", "Page"))]


def test_only_page_numbers_at_a_page_edge_are_chrome():
    def page(*texts: str) -> list[tuple[str, float, float]]:
        return [(t, 700.0 - 14 * i, 11.0) for i, t in enumerate(texts)]

    pages = [
        page("vii", "Preface text.", "More text.", "(7)"),
        page("V", "Part five.", "12", "Last line."),
        page("Text", "42", "in the middle", "of the page", "p. 9"),
    ]
    drop_chrome(pages)
    assert [[t for t, _, _ in p] for p in pages] == [
        ["Preface text.", "More text."],
        ["V", "Part five.", "Last line."],
        ["Text", "in the middle", "of the page"],  # "42" is the second line: an edge
    ]


def test_a_chapters_running_head_is_dropped():
    """Texinfo-style: the head names the chapter and the page, so it changes with each chapter
    and is on no more than half the pages; any line of a chapter's first page stays."""
    chapters = ["Chapter 1: Getting started", "Chapter 2: Statistical models in R",
                "Chapter 3: Graphics"]  # fmt: skip
    pages = []
    for c, head in enumerate(chapters):
        for k in range(4):
            n = 4 * c + k + 1
            first = [head.split(": ")[1]] if k == 0 else [f"{head} {n}"]
            pages.append([*first, "", *_body(n)])
    texts = _texts(pdf_pages(pages))
    assert not [t for t in texts if t.startswith("Chapter")], texts
    assert [t for t in texts if t in ("Getting started", "Graphics")] == [
        "Getting started", "Graphics"
    ]  # fmt: skip


def test_a_short_document_keeps_lines_that_repeat():
    pages = [["Shared first line", "", *_body(p)] for p in range(1, 4)]  # under 4 pages
    assert sum(t == "Shared first line" for t in _texts(pdf_pages(pages))) == 3


def test_an_encrypted_pdf_is_encrypted():
    with pytest.raises(ParseError) as info:
        read_pdf(pdf_pages([_body(1)], encrypt_password="s3cret"), LIMITS)
    assert info.value.code == ErrorCode.ENCRYPTED
    assert "password-protected" in info.value.message


def test_a_scanned_pdf_has_no_blocks_and_read_document_says_no_text():
    doc = read_pdf(scanned_pdf(3), LIMITS)
    assert doc.pages == 3 and doc.blocks == []
    with pytest.raises(ParseError) as info:
        read_document(scanned_pdf(3), "scan.pdf")
    assert info.value.code == ErrorCode.NO_TEXT and "OCR" in info.value.message


@pytest.mark.parametrize(
    "data",
    [truncated_pdf(), b"%PDF-1.7\n%garbage that is no PDF at all", b"%PDF-"],
    ids=["truncated", "garbage", "header-only"],
)
def test_an_unreadable_pdf_is_corrupt(data: bytes):
    with pytest.raises(ParseError) as info:
        read_pdf(data, LIMITS)
    assert info.value.code == ErrorCode.CORRUPT
    assert "\n" not in info.value.message
    with pytest.raises(ParseError) as info:
        read_document(data, "paper.pdf")
    assert info.value.code == ErrorCode.CORRUPT
