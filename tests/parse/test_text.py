"""The plain text reader: decoding, paragraphs at blank lines, lines kept."""

from __future__ import annotations

import pytest

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.formats.text import decode_text, read_text
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.readers import read_document

LIMITS = ParseLimits()


def test_paragraphs_split_at_blank_lines_and_keep_their_lines():
    text = "Roses are red,\nviolets are blue.\n \t\nSecond  paragraph\r\n\r\n\r\nthird ﬁle\x00"
    doc = read_text(text.encode(), LIMITS)
    assert [b.text for b in doc.blocks] == [
        "Roses are red,\nviolets are blue.",
        "Second paragraph",
        "third file",
    ]
    assert doc.title is None and doc.pages is None


@pytest.mark.parametrize(
    "data",
    [
        "\ufeffnaïve café".encode(),
        "naïve café".encode("utf-16"),
        "naïve café".encode("utf-16-be").join([b"\xfe\xff", b""]),
        "naïve café".encode("utf-32"),
        "naïve café".encode("cp1252"),
    ],
    ids=["utf-8-bom", "utf-16-le", "utf-16-be", "utf-32", "cp1252"],
)
def test_decoding(data: bytes):
    assert decode_text(data) == "naïve café"


def test_read_document_reads_text_and_says_when_there_is_none():
    assert read_document(b"plain words", "notes.txt").blocks[0].text == "plain words"
    with pytest.raises(ParseError) as info:
        read_document(b" \n\n\t ", "empty.txt")
    assert info.value.code == ErrorCode.NO_TEXT
