"""A parsed file's chunk is encoded with its title and headings, and still fits the model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from poolq.wire.documents import Document
from poolq.worker.chunks.chunking import Chunker, TokenCounter
from poolq.worker.chunks.context import CONTEXT_TOKENS, context_of, encoded_text, fitted
from poolq.worker.chunks.sections import chunk_documents
from poolq.worker.parse.blocks import Block, ParsedDocument
from poolq.worker.parse.layout import text_and_layout
from tests.models import minilm_path

TOK = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
TOK.no_truncation()
TOK.no_padding()
MAX_LENGTH = 96
CHUNKER = Chunker([TokenCounter(TOK, MAX_LENGTH)], overlap_tokens=8)
PARSED = CHUNKER.narrower(CONTEXT_TOKENS)


def parsed(title, blocks):
    text, layout = text_and_layout(ParsedDocument("application/pdf", title, blocks), source="m")
    return Document("m", text, {}, layout)


def test_the_context_is_title_and_headings_without_repeats():
    doc = parsed("Pump manual", [
        Block("Pump manual", 1, ("Pump manual",), "heading"),
        Block("Installing", 2, ("Pump manual", "Installing"), "heading"),
        Block("Tighten to 40 Nm.", 2, ("Pump manual", "Installing")),
    ])  # fmt: skip
    at = doc.text.index("Tighten")
    assert context_of(doc.layout, at) == "Pump manual › Installing"
    assert encoded_text("A › B", "text") == "A › B\n\ntext"
    assert context_of(None, 0) == "" and encoded_text("", "text") == "text"
    long = parsed("T " * 200, [Block("body", 1)])
    assert len(context_of(long.layout, 0)) <= 110


WORDS = st.lists(st.sampled_from(["valve", "pressure", "gasket", "overhaul", "x" * 30]),
                 min_size=1, max_size=200).map(" ".join)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(WORDS, st.lists(WORDS, min_size=1, max_size=3), WORDS)
def test_a_chunk_with_its_context_fits_the_model(title, headings, body):
    doc = parsed(title, [Block(body, 1, tuple(headings))])
    (chunks,) = chunk_documents(CHUNKER.chunk_many, [doc], PARSED.chunk_many)
    assert chunks
    for c in chunks:
        context = fitted(context_of(doc.layout, c.start), CHUNKER.counters).text
        text = encoded_text(context, c.text)
        assert len(TOK.encode(text).ids) <= MAX_LENGTH, text


def test_the_context_is_cut_to_its_room_in_tokens():
    long_words = " › ".join(["x" * 30] * 3)  # 100 characters, about 30 tokens a word group
    cut = fitted(long_words, CHUNKER.counters).text
    assert cut and cut.endswith("…") and len(TOK.encode(cut).ids) - 2 <= CONTEXT_TOKENS
    whole = fitted("Pump manual › Installing", CHUNKER.counters)
    assert whole.text == "Pump manual › Installing"
    assert whole.ids == (TOK.encode(whole.text, add_special_tokens=False).ids,)
