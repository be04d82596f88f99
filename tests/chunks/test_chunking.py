"""Chunking: fits every tokenizer, prefers boundaries, overlaps, keeps exact spans."""

import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from poolq.worker.chunks.chunking import Chunker, TokenCounter
from tests.models import minilm_path, splade_path


def tokenizer(path):
    tok = Tokenizer.from_file(str(path / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


MINILM = tokenizer(minilm_path())
SPLADE = tokenizer(splade_path())


def n_tokens(tok, text):
    return len(tok.encode(text).ids)


def test_chunks_fit_prefer_paragraphs_and_keep_spans():
    chunker = Chunker([TokenCounter(MINILM, 64)], overlap_tokens=0)
    paras = [" ".join(f"p{p}w{i}" for i in range(12)) + "." for p in range(10)]
    text = "\n\n".join(paras)
    chunks = chunker.chunk(text)
    assert len(chunks) > 1
    for c in chunks:
        assert c.text == text[c.start : c.end]
        assert n_tokens(MINILM, c.text) <= 64
        assert c.text.endswith(".")  # cut at paragraph/sentence ends, not mid-sentence
    assert [c.index for c in chunks] == list(range(len(chunks)))


def test_smallest_max_length_wins_across_tokenizers():
    chunker = Chunker([TokenCounter(MINILM, 256), TokenCounter(SPLADE, 48)], overlap_tokens=4)
    assert chunker.max_tokens == 46  # 48 minus [CLS] and [SEP]
    text = "A sentence about pooling models. " * 80
    for c in chunker.chunk(text):
        assert n_tokens(MINILM, c.text) <= 48 and n_tokens(SPLADE, c.text) <= 48


def test_overlap_repeats_trailing_sentences():
    chunker = Chunker([TokenCounter(MINILM, 40)], overlap_tokens=12)
    text = " ".join(f"Sentence number {i} is here." for i in range(30))
    chunks = chunker.chunk(text)
    for a, b in itertools.pairwise(chunks):
        assert b.start < a.end, "consecutive chunks overlap"
        assert b.start > a.start


def test_text_without_boundaries_is_cut_at_tokens():
    chunker = Chunker([TokenCounter(MINILM, 32)], overlap_tokens=0)
    text = "-".join(str(i) for i in range(400))  # one long "word"
    chunks = chunker.chunk(text)
    assert len(chunks) > 3
    assert all(n_tokens(MINILM, c.text) <= 32 for c in chunks)
    assert "".join(c.text for c in chunks) == text


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=1, max_size=3000), st.integers(16, 128), st.integers(0, 6))
def test_any_text_chunks_fit_and_cover(text, max_len, overlap):
    chunker = Chunker([TokenCounter(MINILM, max_len)], overlap_tokens=overlap)
    chunks = chunker.chunk(text)
    for c in chunks:
        assert c.text == text[c.start : c.end]
        assert n_tokens(MINILM, c.text) <= max_len
    if text.strip():
        assert chunks, "non-empty text gives at least one chunk"
        covered = set()
        for c in chunks:
            covered.update(range(c.start, c.end))
        missing = [i for i in range(len(text)) if i not in covered and not text[i].isspace()]
        assert not missing, "every non-space character is in some chunk"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(st.text(max_size=300), st.sampled_from(["  short one.  ", "", " \n "])),
        min_size=1,
        max_size=6,
    ),
    st.integers(16, 96),
)
# few characters, many tokens: tokenized without offsets first, then again with them
@example(["a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t", "short one."], 16)
def test_many_texts_at_once_chunk_as_one_by_one_and_as_the_general_path(texts, max_len):
    from poolq.worker.chunks.chunking import _SpanCounter

    counters = [TokenCounter(MINILM, max_len), TokenCounter(SPLADE, max_len + 7)]
    chunker = Chunker(counters, overlap_tokens=3)
    many = chunker.chunk_many(texts)
    assert many == [chunker.chunk(t) for t in texts]
    for text, chunks in zip(texts, many, strict=True):
        # the one-chunk shortcut gives what the general path (every token's offsets) gives
        spans = [_SpanCounter(c.encode_batch([text])[0]) for c in chunker.counters]
        assert chunks == chunker._chunk(text, spans, shortcut=False)
        # the tokens a one-chunk text carries (tokenized with or without offsets) are the
        # tokenizer's own for its chunk's text
        for chunk in chunks:
            if chunk.encodings is not None:
                for c, enc in zip(chunker.counters, chunk.encodings, strict=True):
                    ids = enc if isinstance(enc, list) else enc.ids  # a longer text's: its slice
                    assert ids == c.encode_batch([chunk.text])[0].ids
