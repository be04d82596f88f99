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
