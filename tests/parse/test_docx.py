"""The DOCX reader on files written by python-docx: order, headings, lists, tables, errors."""

from __future__ import annotations

import pytest

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.formats.docx import read_docx
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.readers import read_document
from tests.parse.made_files import docx_file, empty_docx, leftover_markup, pptx_file, zip_bomb

LIMITS = ParseLimits()
BODY: list = [
    ("Title", "Field Guide"),
    "A foreword in the body, before any heading.",
    ("Heading 1", "Birds"),
    "Birds have feathers and a ﬁne sense of direction.",
    ("List Bullet", "Sparrow"),
    ("List Number", "Robin"),
    ("Heading 2", "Waders"),
    [["Bird", "Legs"], ["Heron", "long"], ["", ""]],
    ("Heading 1", "Fish"),
    "Fish have fins & gills <really>.",
]


def test_body_order_kinds_and_heading_paths():
    doc = read_docx(docx_file(BODY), LIMITS)
    top = ("Field Guide",)
    got = [(b.kind, b.headings, b.text) for b in doc.blocks]
    assert got == [
        ("heading", top, "Field Guide"),
        ("paragraph", top, "A foreword in the body, before any heading."),
        ("heading", (*top, "Birds"), "Birds"),
        ("paragraph", (*top, "Birds"), "Birds have feathers and a fine sense of direction."),
        ("list", (*top, "Birds"), "Sparrow"),
        ("list", (*top, "Birds"), "Robin"),
        ("heading", (*top, "Birds", "Waders"), "Waders"),
        ("table", (*top, "Birds", "Waders"), "Bird | Legs"),
        ("table", (*top, "Birds", "Waders"), "Heron | long"),
        ("heading", (*top, "Fish"), "Fish"),
        ("paragraph", (*top, "Fish"), "Fish have fins & gills <really>."),
    ]
    assert doc.pages is None and all(b.page is None for b in doc.blocks)
    assert leftover_markup([b.text for b in doc.blocks[:-1]]) == []


def test_title_from_core_properties_then_title_style_then_first_heading():
    assert read_docx(docx_file(BODY, title="Core Title"), LIMITS).title == "Core Title"
    assert read_docx(docx_file(BODY), LIMITS).title == "Field Guide"
    assert read_docx(docx_file([("Heading 2", "Only"), "x"]), LIMITS).title == "Only"
    assert read_docx(docx_file(["no headings"]), LIMITS).title is None


def test_read_document_sniffs_a_docx_under_any_name():
    doc = read_document(docx_file(["Plain words."]), "download.bin")
    assert doc.mime.endswith("wordprocessingml.document")
    assert [b.text for b in doc.blocks] == ["Plain words."]


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (empty_docx(), ErrorCode.CORRUPT),
        (b"PK\x03\x04" + bytes(100), ErrorCode.CORRUPT),
        (docx_file(["x"])[:-300], ErrorCode.CORRUPT),
        (pptx_file([("t", ["x"])]), ErrorCode.CORRUPT),
        (zip_bomb(), ErrorCode.TOO_LARGE),
    ],
    ids=["0-byte", "garbage", "truncated", "a-pptx", "bomb"],
)
def test_unreadable_files(data: bytes, code: ErrorCode):
    with pytest.raises(ParseError) as info:
        read_docx(data, LIMITS)
    assert info.value.code == code
    assert "\n" not in info.value.message and "BytesIO" not in info.value.message


def test_a_0_byte_docx_through_read_document_is_corrupt():
    with pytest.raises(ParseError) as info:
        read_document(empty_docx(), "report.docx")
    assert info.value.code == ErrorCode.CORRUPT
