"""Chunks follow a parsed document's sections: none straddles two sections when it need not,
a bare heading joins the section under it, and every chunk's span stays exact."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from poolq.wire.documents import Document
from poolq.worker.chunks.chunking import Chunker, TokenCounter
from poolq.worker.chunks.sections import chunk_documents, section_spans
from poolq.worker.parse.blocks import Block, ParsedDocument
from poolq.worker.parse.layout import text_and_layout
from tests.models import minilm_path

TOK = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
CHUNKER = Chunker([TokenCounter(TOK, 128)], overlap_tokens=8)


def doc_of(blocks: list[Block]) -> Document:
    text, layout = text_and_layout(ParsedDocument("text/html", None, blocks), source="x.html")
    return Document("d", text, {}, layout)


def test_short_sections_are_chunks_of_their_own():
    doc = doc_of([
        Block("Install", None, ("Install",), "heading"),
        Block("Run the installer.", None, ("Install",)),
        Block("Upgrade", None, ("Upgrade",), "heading"),
        Block("Run it again.", None, ("Upgrade",)),
    ])  # fmt: skip
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [doc])
    assert [c.text for c in chunks] == ["Install\n\nRun the installer.", "Upgrade\n\nRun it again."]
    assert [c.index for c in chunks] == [0, 1]
    assert all(doc.text[c.start : c.end] == c.text for c in chunks)
    assert [doc.layout.headings_at(c.start) for c in chunks] == [("Install",), ("Upgrade",)]


def test_a_bare_heading_joins_the_section_under_it():
    doc = doc_of([
        Block("Guide", None, ("Guide",), "heading"),
        Block("Setup", None, ("Guide", "Setup"), "heading"),
        Block("Plug it in.", None, ("Guide", "Setup")),
    ])  # fmt: skip
    assert len(section_spans(doc.text, doc.layout)) == 1
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [doc])
    assert [c.text for c in chunks] == ["Guide\n\nSetup\n\nPlug it in."]


def test_a_document_without_layout_is_chunked_whole():
    plain = Document("p", "One.\n\nTwo.")
    assert chunk_documents(CHUNKER.chunk_many, [plain]) == [CHUNKER.chunk_many([plain.text])[0]]


WORDS = st.lists(st.sampled_from(["pump", "valve", "seal", "bolt", "torque", "flow"]), min_size=1,
                 max_size=60).map(" ".join)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), WORDS), min_size=1, max_size=10))
def test_no_chunk_straddles_two_sections(sections):
    blocks = []
    for n, (heading, body) in enumerate(sections):
        path = (f"H{heading}-{n}",)
        blocks += [Block(path[0], None, path, "heading"), Block(body, None, path)]
    doc = doc_of(blocks)
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [doc])
    starts = [s for s, _ in doc.layout.sections]
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        inside = [s for s in starts if c.start < s < c.end]
        assert inside == [], (c, inside)
    covered = "".join(c.text for c in chunks)
    for b in blocks:  # nothing lost
        assert b.text in covered


def _para(page: int) -> str:
    return " ".join(f"valve{page} seal{page} gasket{page}." for _ in range(25))  # ~500 chars


def test_a_chunk_cites_the_one_page_its_text_is_on():
    blocks = [Block(_para(p), p, ("Manual",)) for p in (1, 2, 3)]
    doc = Document("m", *_text_layout(blocks))
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [doc])
    pages = [doc.layout.page_range(c.start, c.end) for c in chunks]
    assert sorted(set(pages)) == [(1, 1), (2, 2), (3, 3)], pages


def test_a_short_page_joins_its_neighbour():
    blocks = [Block(_para(1), 1), Block("Only a line.", 2), Block(_para(3), 3),
              Block(_para(4), 4), Block("The end.", 5)]  # fmt: skip
    doc = Document("m", *_text_layout(blocks))
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [doc])
    pages = {doc.layout.page_range(c.start, c.end) for c in chunks}
    assert {(2, 3), (4, 5)} <= pages and pages <= {(1, 1), (2, 3), (3, 3), (4, 4), (4, 5)}
    # a short last page after a page pair stays alone: no chunk cites more than two pages
    paired = Document("m", *_text_layout([*blocks[:3], Block("Appendix.", 4)]))
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [paired])
    pages = {paired.layout.page_range(c.start, c.end) for c in chunks}
    assert (4, 4) in pages and max(b - a for a, b in pages) <= 1, pages


def _text_layout(blocks: list[Block]):
    text, layout = text_and_layout(ParsedDocument("application/pdf", None, blocks), source="m")
    return text, {}, layout


def test_short_pages_join_two_at_most():
    blocks = [Block(f"Line of page {p}.", p) for p in range(1, 8)]
    doc = Document("m", *_text_layout(blocks))
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [doc])
    pages = [doc.layout.page_range(c.start, c.end) for c in chunks]
    assert pages == [(1, 2), (3, 4), (5, 6), (7, 7)], pages


def test_only_chunks_with_a_context_leave_room_for_it():
    """A parsed file's section with a title or headings is cut by the chunker that leaves room
    for them (``context.py``); a plain text file (no title, no headings) is cut as the same text
    sent as text is: its chunks are as long."""
    narrow = CHUNKER.narrower(64)
    body = " ".join(f"The seal number {i} of the pump is checked every year." for i in range(60))
    plain = doc_of([Block(p) for p in (body, body)])  # a .txt file: paragraphs only
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [plain], narrow.chunk_many)
    assert chunks == CHUNKER.chunk_many([plain.text])[0]
    text, layout = text_and_layout(ParsedDocument("text/plain", "Pump notes", [Block(body)]),
                                   source="notes.txt")  # fmt: skip
    titled = Document("t", text, {}, layout)
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [titled], narrow.chunk_many)
    assert chunks == narrow.chunk_many([text])[0]
    headed = doc_of([Block(body), Block("Servicing", None, ("Servicing",), "heading"),
                     Block(body, None, ("Servicing",))])  # fmt: skip
    first, second = section_spans(headed.text, headed.layout)
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [headed], narrow.chunk_many)
    expected = [*CHUNKER.chunk_many([headed.text[slice(*first)]])[0],
                *narrow.chunk_many([headed.text[slice(*second)]])[0]]  # fmt: skip
    assert [c.text for c in chunks] == [c.text for c in expected]
