"""OCR of scanned pages and image files in the parse children: real pages typeset at test time,
rendered to images and written back as scans (``made_scans.py``), so every word is known.
Skipped, with the reason, where the ``ocr`` extra or its language data is not installed; the
``no_text`` messages without it are checked everywhere."""

from __future__ import annotations

import pytest
from rapidfuzz.distance import Levenshtein

from poolq.wire.records.codes import ErrorCode
from poolq.worker.parse import ocr_engine
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.layout import text_and_layout
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.readers import read_document
from poolq.worker.parse.sandbox import ParsePool
from tests.parse.made_scans import (
    huge_image_pdf,
    huge_png,
    image_file,
    mixed_pdf,
    noise_png,
)

MISSING = ocr_engine.missing()
needs_ocr = pytest.mark.skipif(MISSING is not None, reason=f"no OCR here: {MISSING}")
CRANE = [
    "The harbour crane must stop lifting when wind gusts exceed",
    "seventy kilometres per hour, measured at the boom tip.",
    "",
    "Park the boom in its cradle and lock the slewing brake before",
    "leaving the cabin at the end of every shift.",
]
TYPED = ["The ferry to the island sails at noon from the north pier."]
MIXED = mixed_pdf([("typed", TYPED), ("scanned", CRANE), ("typed", ["The last typed page."])])


def cer(got: str, want: str) -> float:
    a, b = " ".join(got.split()), " ".join(want.split())
    return Levenshtein.distance(a, b) / len(b)


def page_text(doc, page: int) -> str:
    return " ".join(b.text for b in doc.blocks if b.page == page)


async def parse(data: bytes, name: str, child: str | None = None, **limits) -> object:
    pool = ParsePool(2, ParseLimits(**limits), child)
    try:
        return await pool.parse(data, name)
    finally:
        await pool.close()


@needs_ocr
async def test_a_mixed_pdf_ocrs_only_its_scanned_page():
    pages: list[int] = []
    pool = ParsePool(2)
    try:
        doc = await pool.parse(MIXED, "mixed.pdf", on_page=lambda: pages.append(1))
    finally:
        await pool.close()
    assert doc.ocr_pages == (2,) and len(pages) == 1  # typed pages keep their text layer
    assert page_text(doc, 1) == TYPED[0]
    assert cer(page_text(doc, 2), " ".join(CRANE)) <= 0.05
    assert page_text(doc, 3) == "The last typed page."
    _, layout = text_and_layout(doc, source="mixed.pdf")
    crane_at = next(b for b in doc.blocks if b.page == 2)
    text, _ = text_and_layout(doc, source="mixed.pdf")
    at = text.index(crane_at.text)
    assert layout.ocr_in(at, at + 10) and not layout.ocr_in(0, 10)  # the payload's ocr field
    assert layout.page_at(at) == 2  # cited by its page as any other


@needs_ocr
@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "TIFF"])
async def test_image_files_are_pages(fmt):
    pages = [CRANE, ["A second frame of the fax, about the night shift."]]
    data = image_file(pages if fmt == "TIFF" else pages[:1], fmt)
    doc = await parse(data, "scan.bin")  # sniffed by content, not by name
    assert doc.mime == f"image/{fmt.lower()}"
    assert doc.ocr_pages == ((1, 2) if fmt == "TIFF" else (1,))
    assert cer(page_text(doc, 1), " ".join(CRANE)) <= 0.05
    if fmt == "TIFF":
        assert "night shift" in page_text(doc, 2)


@needs_ocr
async def test_hostile_inputs_get_codes_and_the_children_live():
    hostile = {
        "huge.png": (huge_png(), ErrorCode.TOO_LARGE),
        "empty.tiff": (b"", ErrorCode.CORRUPT),
        "poster.pdf": (huge_image_pdf(), ErrorCode.TOO_LARGE),
        "noise.png": (noise_png(), ErrorCode.NO_TEXT),
    }
    pool = ParsePool(1, ParseLimits(timeout_s=60))
    try:
        for name, (data, code) in hostile.items():
            with pytest.raises(ParseError) as e:
                await pool.parse(data, name)
            assert e.value.code == code, (name, e.value.message)
            assert "\n" not in e.value.message
        assert (await pool.parse(image_file([CRANE]), "after.png")).ocr_pages == (1,)
    finally:
        await pool.close()


@needs_ocr
async def test_a_page_past_its_time_cap_is_its_own_error_and_the_rest_lands(monkeypatch):
    monkeypatch.setenv("FAULT_HANG_OCR_PAGES", "2")  # read by the fault child
    data = mixed_pdf([("typed", TYPED), ("scanned", CRANE), ("scanned", ["Page three, scanned."])])
    doc = await parse(data, "slow.pdf", "tests.parse.fault_child", timeout_s=12)
    assert doc.page_errors[0][:2] == (2, "parse_timeout")
    assert "12s" in doc.page_errors[0][2]
    assert doc.ocr_pages == (3,) and "Page three" in page_text(doc, 3)
    assert page_text(doc, 1) == TYPED[0]


@needs_ocr
async def test_never_reads_no_page_and_always_reads_every_page():
    never = await parse(MIXED, "m.pdf", ocr="never")
    assert never.ocr_pages == () and page_text(never, 2) == ""
    always = await parse(MIXED, "m.pdf", ocr="always")
    assert always.ocr_pages == (1, 2, 3)
    assert cer(page_text(always, 1), TYPED[0]) <= 0.05


def test_no_text_names_the_setting_when_ocr_is_off():
    scan = image_file([CRANE])
    with pytest.raises(ParseError) as e:
        read_document(scan, "scan.png", ParseLimits(ocr="never"))
    assert e.value.code == ErrorCode.NO_TEXT
    assert "--ocr never" in e.value.message and "POOLQ_OCR" in e.value.message


def test_no_text_names_the_extra_where_ocr_is_not_installed(monkeypatch):
    monkeypatch.setattr(ocr_engine, "missing", lambda: "OCR is not installed on this worker "
                        f"({ocr_engine.EXTRA_HINT})")  # fmt: skip
    for data, name in [
        (mixed_pdf([("scanned", CRANE)]), "scan.pdf"),
        (image_file([CRANE]), "s.png"),
    ]:
        with pytest.raises(ParseError) as e:
            read_document(data, name)
        assert e.value.code == ErrorCode.NO_TEXT
        assert "poolq[ocr]" in e.value.message and "OCR" in e.value.message
    # a mixed file still lands its typed pages
    assert read_document(MIXED, "m.pdf").ocr_pages == ()


@needs_ocr
async def test_a_long_scan_holds_a_child_for_one_page_at_a_time():
    import asyncio

    scan = mixed_pdf([("scanned", [f"Page {n} of a long scanned contract."]) for n in range(6)])
    first_page = asyncio.Event()
    pool = ParsePool(1)  # one child: the note must get it between the scan's pages
    try:
        long = asyncio.ensure_future(pool.parse(scan, "contract.pdf", on_page=first_page.set))
        await first_page.wait()
        note = await pool.parse(b"A short note about the ferry.", "note.txt")
        assert note.blocks and not long.done()  # served while the scan still has pages left
        assert (await long).ocr_pages == (1, 2, 3, 4, 5, 6)
    finally:
        await pool.close()


def test_which_text_layers_are_unusable():
    from poolq.worker.parse.formats.pdf_scan import unusable_text

    assert unusable_text("") and unusable_text(" \n\t")
    assert unusable_text("\ufffd\ufffd\ufffd\ufffd ok")  # glyph codes without a Unicode map
    assert unusable_text("\ue001\ue002\ue003\ue004\ue005 abc")  # private-use glyphs
    assert not unusable_text("A page of ordinary text, with \ufffd one odd glyph.")
