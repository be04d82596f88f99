"""A hit's citation: built from a point's payload, written with exactly its six fields, and
shown to people as ``source p.12–13`` or ``source › Heading › Sub``."""

from __future__ import annotations

from poolq.wire import payload as fields
from poolq.wire.search_results import ChunkMatch, Citation, Hit

PAYLOAD = {
    "doc_id": "/srv/docs/pump.pdf",
    "source": "manuals/pump.pdf",
    "title": "Pump manual",
    "mime": "application/pdf",
    "page_start": 12,
    "page_end": 13,
    "headings": ["Installing", "Floor"],
    "text": "Bolt it down.",
}


def test_a_citation_has_exactly_the_six_fields():
    c = Citation.from_dict(PAYLOAD)
    assert list(c.to_dict()) == list(fields.CITATION_FIELDS)
    assert c.to_dict() == {k: PAYLOAD[k] for k in fields.CITATION_FIELDS}
    assert Citation.from_dict(c.to_dict()) == c


def test_labels_cite_pages_or_headings():
    assert Citation.from_dict(PAYLOAD).label() == "manuals/pump.pdf p.12–13"
    one_page = Citation("a.pdf", None, "application/pdf", 4, 4)
    assert one_page.label() == "a.pdf p.4"
    html = Citation("guide.html", "Guide", "text/html", None, None, ("Install", "Linux"))
    assert html.label() == "guide.html › Install › Linux"
    assert Citation().label("doc-7") == "doc-7"


def test_hits_and_their_chunks_carry_citations_through_the_wire():
    c = Citation.from_dict(PAYLOAD)
    hit = Hit("p1", 0.9, "d", 0, "t", {}, [ChunkMatch("p2", 0.5, 1, "u", c)], c)
    wire = hit.to_dict()
    assert wire["citation"] == c.to_dict() and wire["chunks"][0]["citation"] == c.to_dict()
    assert Hit.from_dict(wire) == hit


def test_a_point_without_the_fields_cites_nothing():
    c = Citation.from_dict({"doc_id": "x", "text": "y", "page_start": True, "headings": "A"})
    assert c == Citation()
    assert c.to_dict() == {"source": None, "title": None, "mime": None, "page_start": None,
                           "page_end": None, "headings": []}  # fmt: skip
