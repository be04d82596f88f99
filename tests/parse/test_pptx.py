"""The PPTX reader on decks written by python-pptx: slides as pages, titles as headings."""

from __future__ import annotations

import pytest

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.formats.pptx import read_pptx
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.readers import read_document
from tests.parse.made_files import docx_file, pptx_file

LIMITS = ParseLimits()


def _deck(**kw) -> bytes:
    slides = [
        ("Quarterly review", ["Revenue grew", "Costs fell"]),
        ("Numbers", ["See the table"]),
        ("", ["A slide without a title"]),
    ]
    return pptx_file(
        slides,
        notes=["Say thanks to the team", None, None],
        tables={2: [["Quarter", "Revenue"], ["Q1", "10"]]},
        **kw,
    )


def test_slides_are_pages_and_their_titles_are_the_path():
    doc = read_pptx(_deck(), LIMITS)
    assert doc.pages == 3
    got = [(b.page, b.kind, b.headings, b.text) for b in doc.blocks]
    q, n = ("Quarterly review",), ("Numbers",)
    assert got == [
        (1, "heading", q, "Quarterly review"),
        (1, "paragraph", q, "Revenue grew"),
        (1, "paragraph", q, "Costs fell"),
        (1, "paragraph", q, "Say thanks to the team"),  # the speaker notes
        (2, "heading", n, "Numbers"),
        (2, "paragraph", n, "See the table"),
        (2, "table", n, "Quarter | Revenue"),
        (2, "table", n, "Q1 | 10"),
        (3, "paragraph", (), "A slide without a title"),
    ]


def test_title_from_core_properties_else_the_first_slide():
    assert read_pptx(_deck(title="Q3 Deck"), LIMITS).title == "Q3 Deck"
    assert read_pptx(_deck(), LIMITS).title == "Quarterly review"


def test_read_document_sniffs_a_pptx():
    doc = read_document(_deck(), "deck")
    assert doc.mime.endswith("presentationml.presentation") and doc.pages == 3


@pytest.mark.parametrize("data", [b"", b"PK\x05\x06" + bytes(18), docx_file(["x"])])
def test_unreadable_files_are_corrupt(data: bytes):
    with pytest.raises(ParseError) as info:
        read_pptx(data, LIMITS)
    assert info.value.code == ErrorCode.CORRUPT
    assert "\n" not in info.value.message
