"""A parsed document as an ingest job's document: blocks joined, sections and pages mapped back
exactly, and the layout checked on the wire."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from poolq.wire.documents import Document, validate_document
from poolq.wire.layout import Layout
from poolq.worker.parse.blocks import Block, ParsedDocument
from poolq.worker.parse.layout import parsed_document, text_and_layout

MANUAL = ParsedDocument(
    "application/pdf",
    "Pump manual",
    [
        Block("Pump manual", 1, ("Pump manual",), "heading"),
        Block("Keep the pump dry.", 1, ("Pump manual",)),
        Block("Installing", 2, ("Pump manual", "Installing"), "heading"),
        Block("Bolt it to the floor.", 2, ("Pump manual", "Installing")),
        Block("Tighten to 40 Nm.", 3, ("Pump manual", "Installing")),
    ],
    pages=3,
)


def test_each_block_maps_back_to_its_page_and_headings():
    text, layout = text_and_layout(MANUAL, source="manuals/pump.pdf")
    for block in MANUAL.blocks:
        at = text.index(block.text)
        assert layout.page_at(at) == block.page
        assert layout.headings_at(at) == block.headings
        assert layout.page_range(at, at + len(block.text)) == (block.page, block.page)
    whole = layout.page_range(0, len(text))
    assert whole == (1, 3)
    assert layout.source == "manuals/pump.pdf" and layout.title == "Pump manual"


@given(
    st.lists(
        st.tuples(
            st.text(st.characters(codec="utf-8"), min_size=1).filter(str.strip),
            st.one_of(st.none(), st.integers(1, 5)),
            st.lists(st.sampled_from(["A", "B", "C"]), max_size=3).map(tuple),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_any_blocks_round_trip_through_the_wire(blocks):
    parsed = ParsedDocument("text/html", None, [Block(t, p, h) for t, p, h in blocks])
    doc = parsed_document("d", parsed, source="s")
    checked = validate_document(doc, 0)
    assert isinstance(checked, Document), checked
    layout = checked.layout
    assert layout is not None
    pos = 0
    for block in parsed.blocks:
        t = block.text.strip()
        at = checked.text.index(t, pos)
        assert layout.headings_at(at) == (block.headings if len(layout.sections) else ())
        if block.page is not None:
            assert layout.page_at(at) == block.page
        pos = at + len(t)


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"mime": ""}, "mime"),
        ({"mime": "text/html", "pages": [[0, 0]]}, "pages[0]"),
        ({"mime": "text/html", "pages": [[5, 1], [3, 2]]}, "pages[1]"),
        ({"mime": "text/html", "sections": [[0, "Intro"]]}, "sections[0]"),
        ({"mime": "text/html", "sections": [[99, ["A"]]]}, "sections[0]"),
        ({"mime": "text/html", "colour": "red"}, "colour"),
    ],
)
def test_a_bad_layout_is_refused_naming_the_field(bad, field):
    err = validate_document({"id": "d", "text": "some text", "layout": bad}, 0)
    assert not isinstance(err, Document)
    assert err.field == "layout" and field in err.message


def test_the_layout_is_part_of_the_documents_hash():
    text, layout = text_and_layout(MANUAL, source="a.pdf")
    a = Document("d", text, {}, layout)
    moved = Layout(layout.mime, layout.source, "Another title", layout.sections, layout.pages)
    b = Document("d", text, {}, moved)
    same_file_again = Layout(
        layout.mime, layout.source, layout.title, layout.sections, layout.pages, "other:1"
    )
    assert a.content_hash != b.content_hash
    assert a.content_hash == Document("d", text, {}, same_file_again).content_hash
    assert Document("d", text).content_hash != a.content_hash
