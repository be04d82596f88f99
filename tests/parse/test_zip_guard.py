"""zip_guard.py: zip bombs refused before or while inflating, broken zips named CORRUPT."""

from __future__ import annotations

import io
import zipfile

import pytest

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.readers import read_document
from poolq.worker.parse.zip_guard import MAX_MEMBERS, CheckedZip, checked_stream
from tests.parse.made_files import docx_file, empty_docx, epub_file, zip_bomb

SMALL = ParseLimits(max_inflated_bytes=4 << 20)


def _code(fn, *args) -> ErrorCode:
    with pytest.raises(ParseError) as info:
        fn(*args)
    assert "\n" not in info.value.message
    return info.value.code


def test_a_zip_bomb_is_refused_by_its_declared_size_before_inflating():
    bomb = zip_bomb()  # 300 MiB of zeros in a ~300 KB file, over the 256 MiB default
    assert len(bomb) < 1 << 20
    assert _code(CheckedZip, bomb, ParseLimits(), "DOCX") == ErrorCode.TOO_LARGE
    assert _code(read_document, bomb, "report.docx") == ErrorCode.TOO_LARGE
    # under the ratio rule's 10 MiB floor: the sum of declared sizes alone refuses it
    assert _code(CheckedZip, zip_bomb(5 << 20), SMALL, "DOCX") == ErrorCode.TOO_LARGE


def test_an_absurd_compression_ratio_is_refused_under_the_size_limit():
    bomb = zip_bomb(20 << 20)  # 20 MiB inflated, under the limit, but compressed 1000:1
    with pytest.raises(ParseError) as info:
        CheckedZip(bomb, ParseLimits(), "DOCX")
    assert info.value.code == ErrorCode.TOO_LARGE and "zip bomb" in info.value.message


def test_a_member_that_lies_about_its_size_stops_at_the_bound():
    liar = zip_bomb(300 << 20, declared_bytes=1000)  # says 1000 bytes: passes the header checks
    zf = CheckedZip(liar, ParseLimits(), "DOCX")
    with pytest.raises(ParseError) as info:
        zf.read("word/document.xml")
    assert info.value.code == ErrorCode.TOO_LARGE
    assert _code(checked_stream, liar, ParseLimits(), "DOCX") == ErrorCode.TOO_LARGE


def test_reads_count_against_one_budget():
    zf = CheckedZip(zip_bomb(3 << 20), SMALL, "DOCX")  # 3 MiB: within 4 MiB once, not twice
    assert len(zf.read("word/document.xml")) == 3 << 20
    with pytest.raises(ParseError) as info:
        zf.read("word/document.xml")
    assert info.value.code == ErrorCode.TOO_LARGE


def test_too_many_members_is_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for i in range(MAX_MEMBERS + 1):
            z.writestr(f"m{i}", b"")
    assert _code(CheckedZip, buf.getvalue(), ParseLimits(), "EPUB") == ErrorCode.TOO_LARGE


def test_a_good_file_reads_whole():
    book = epub_file([("One", "<p>x</p>")])
    with CheckedZip(book, ParseLimits(), "EPUB") as zf:
        assert zf.read("mimetype") == b"application/epub+zip"
        assert "OEBPS/content.opf" in zf and "missing" not in zf
    stream = checked_stream(docx_file(["hello"]), ParseLimits(), "DOCX")
    assert zipfile.ZipFile(stream).testzip() is None


@pytest.mark.parametrize(
    "data",
    [empty_docx(), b"PK\x03\x04 not really a zip", docx_file(["x"])[:-200], b"plain bytes"],
    ids=["empty", "garbage", "truncated", "not-a-zip"],
)
def test_a_broken_zip_is_corrupt(data: bytes):
    assert _code(checked_stream, data, ParseLimits(), "DOCX") == ErrorCode.CORRUPT


def test_a_damaged_member_is_corrupt():
    good = docx_file(["some text that compresses"])
    info = zipfile.ZipFile(io.BytesIO(good)).getinfo("word/document.xml")
    at = info.header_offset + 30 + len(info.filename) + 10  # inside its compressed bytes
    bad = good[:at] + bytes([good[at] ^ 0xFF]) + good[at + 1 :]
    assert _code(checked_stream, bad, ParseLimits(), "DOCX") == ErrorCode.CORRUPT


def test_a_missing_member_is_corrupt():
    zf = CheckedZip(epub_file([("One", "<p>x</p>")]), ParseLimits(), "EPUB")
    assert _code(zf.read, "nope.xhtml") == ErrorCode.CORRUPT
