"""Tokens reused from chunking: a document is tokenized once, by the chunker, and the engine
only adds the special tokens (``AsyncEngine.encode(pretokenized=...)``): the whole document's
tokens when it fits one chunk, a chunk's share of them when it is cut at whitespace (BERT-style
tokenizers, ``chunks/token_slices.py``). What the engine then computes equals what it computes
from the text itself."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from poolq.worker.chunks.chunking import Chunker
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.runtime.vectorizer import chunk_counter
from tests.texts import varied_texts

pytestmark = pytest.mark.slow  # a real model


@pytest.fixture(scope="module")
def model(minilm):
    return load_model(ModelConfig(minilm))


@pytest.fixture(scope="module")
def chunker(model):
    return Chunker(
        [chunk_counter(model.description, model.tokenizer.backend)], max_tokens=64, overlap_tokens=8
    )


def _engine_inputs(model, chunker, texts):
    chunks = [c for cs in chunker.chunk_many(texts) for c in cs]
    return [c.text for c in chunks], [c.encodings[0] if c.encodings else None for c in chunks]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=400),
        min_size=1,
        max_size=6,
    )
)
def test_reused_tokens_are_the_tokens_of_the_chunk_text(model, chunker, texts):
    chunk_texts, pre = _engine_inputs(model, chunker, texts)
    engine = AsyncEngine(model)
    fresh = engine._tokenize(chunk_texts, None)
    reused = engine._tokenize(chunk_texts, None, pre)
    assert [(t.ids, t.truncated) for t in reused] == [(t.ids, t.truncated) for t in fresh]


def test_chunks_carry_their_tokens_unless_cut_mid_word(chunker):
    short, long = "  \n A short document. \n\n", " ".join(["word"] * 200)
    glued = "x9" * 45 + " " + "q7z" * 33  # two words of 90 and 99 pieces: longer than a chunk
    (one,), many, cut = chunker.chunk_many([short, long, glued])
    counter = chunker.counters[0]
    assert one.text == "A short document." and one.encodings is not None
    assert one.encodings[0].ids == counter._tok.encode(one.text, add_special_tokens=False).ids
    assert len(many) > 1
    for c in many:  # cut at spaces: their ids, from the document's tokens
        assert c.encodings[0] == counter._tok.encode(c.text, add_special_tokens=False).ids
    assert len(cut) > 1 and all(c.encodings is None for c in cut)  # cut inside words


async def test_vectors_from_reused_tokens_equal_those_from_the_text(model, chunker):
    texts = [
        *varied_texts(24, seed=11),
        "  padded with spaces  ",
        " ".join(["long"] * 300),
        "x9" * 45,  # one word of 90 pieces, cut mid-word: tokenized again
    ]
    chunk_texts, pre = _engine_inputs(model, chunker, texts)
    assert 0 < sum(p is not None for p in pre) < len(pre)  # both kinds in one call
    async with AsyncEngine(model, max_batch_tokens=512) as engine:
        a = await engine.encode(chunk_texts, ["embed", "token_embed"])
        b = await engine.encode(chunk_texts, ["embed", "token_embed"], pretokenized=pre)
    for x, y in zip(a, b, strict=True):
        for task in ("embed", "token_embed"):
            torch.testing.assert_close(x[task], y[task], atol=1e-6, rtol=1e-5)


def _parsed(title, sections):
    """A parsed file's document: a title, then (heading path, paragraphs) sections."""
    from poolq.wire.documents import Document
    from poolq.worker.parse.blocks import Block, ParsedDocument
    from poolq.worker.parse.layout import text_and_layout

    blocks = []
    for headings, paras in sections:
        blocks += [Block(headings[-1], None, headings, "heading")] if headings else []
        blocks += [Block(p, None, headings) for p in paras if p.strip()]
    text, layout = text_and_layout(ParsedDocument("text/html", title, blocks), source="f.html")
    return Document("f", text, {}, layout)


def _with_context_inputs(model, texts_or_docs):
    from poolq.worker.chunks.context import CONTEXT_TOKENS, encoder_inputs
    from poolq.worker.chunks.sections import chunk_documents

    counter = chunk_counter(model.description, model.tokenizer.backend)
    chunker = Chunker([counter], max_tokens=64, overlap_tokens=8)
    docs = texts_or_docs
    chunked = chunk_documents(chunker.chunk_many, docs, chunker.narrower(CONTEXT_TOKENS).chunk_many)
    inputs = [x for doc in encoder_inputs(docs, chunked, [counter]) for x in doc]
    own = [c.encodings for cs in chunked for c in cs]
    return [t for t, _ in inputs], [e[0] if e else None for _, e in inputs], own


def _parsed_files():
    words = varied_texts(40, seed=5)
    manual = [
        (("Pump manual", "Installing"), words[:3]),
        (("Pump manual", "Installing", "Bolts"), [" ".join(["torque"] * 90)]),
        (("Pump manual", "Servicing"), words[3:9]),
    ]
    return [
        _parsed("Pump manual", manual),
        _parsed("Ünïcode — titel 東京", [(("Überblick",), words[9:20])]),
        _parsed(None, [(("Only a heading",), words[20:23])]),
        _parsed("A title, no headings", [((), words[23:30])]),
    ]


def test_parsed_chunks_carry_their_tokens_with_their_context(model):
    """A parsed file's chunk is encoded with its title and headings before it: the engine gets
    the context's tokens and the chunk's together, and they are what tokenizing the whole
    encoded text gives."""
    texts, pre, own = _with_context_inputs(model, _parsed_files())
    assert any("›" in t for t in texts)  # contexts with headings are there
    # every chunk that has its own tokens (all but those cut mid-word) carries them
    assert [p is None for p in pre] == [o is None for o in own]
    assert sum(p is not None for p in pre) > 0.8 * len(pre)
    engine = AsyncEngine(model)
    fresh = engine._tokenize(texts, None)
    reused = engine._tokenize(texts, None, pre)
    assert [(t.ids, t.truncated) for t in reused] == [(t.ids, t.truncated) for t in fresh]


async def test_vectors_of_parsed_chunks_from_reused_tokens_equal_those_from_the_text(model):
    texts, pre, _ = _with_context_inputs(model, _parsed_files())
    async with AsyncEngine(model, max_batch_tokens=512) as engine:
        a = await engine.encode(texts, ["embed", "token_embed"])
        b = await engine.encode(texts, ["embed", "token_embed"], pretokenized=pre)
    for x, y in zip(a, b, strict=True):
        for task in ("embed", "token_embed"):
            torch.testing.assert_close(x[task], y[task], atol=1e-6, rtol=1e-5)
