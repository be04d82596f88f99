"""A chunk's ids taken from its document's tokens (``worker/chunks/token_slices.py``) are what
tokenizing the chunk alone gives, for the tokenizers where the chunker takes them; the others
(byte-level BPE) are refused; and the engine's tokenizer puts the special tokens around them
as its post-processor does."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from poolq.worker.chunks.chunking import Chunker, TokenCounter
from poolq.worker.chunks.token_slices import slice_exact
from poolq.worker.engine.execution.tokenizer import TextTokenizer
from tests.chunks.test_chunking import MINILM, SPLADE
from tests.models import minilm_path

WORDS = st.sampled_from(
    ["pooling", "Über", "naïve", "café", "tokenization", "ColBERT", "x", "42", "3.14", "é",
     "東京", "日本語", "e\u0301", "don't", "(a)", "--", "...", "unbelievably", "\x00", "[MASK]",
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "reallylongwordwithoutanyspacesthatmustbecut" * 3,
     "tokenization" * 8,  # one word of ~23 pieces (under the tokenizer's 100 characters)
     "unbelievablynaïve" * 5, "x9" * 45]  # one word of 90 pieces: cut mid-word
)  # fmt: skip
# Python's isspace() is true for all of these; BERT's normalizer drops the controls among them
# (U+001C, U+000B, U+0085), gluing the words on either side
SEPARATORS = st.sampled_from(
    [" ", "  ", "\n", "\n\n", ". ", "! ", "\t", " \u3000 ", ", ", "\x1c", "\x0b", "\x85",
     "\u2028", "\xa0", "\r\n"]
)  # fmt: skip


@st.composite
def documents(draw):
    n = draw(st.integers(1, 120))
    parts = []
    for _ in range(n):
        parts += [draw(WORDS), draw(SEPARATORS)]
    return draw(st.sampled_from(["", " ", "\n"])) + "".join(parts)


def _alone(tok: Tokenizer, text: str) -> list[int]:
    return tok.encode(text, add_special_tokens=False).ids


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=documents(), max_tokens=st.integers(8, 40), overlap=st.integers(0, 3))
@example(text="Sentence one here. " * 40 + "tokenization" * 8 + " tail.", max_tokens=16, overlap=2)
@example(text="word\x1cpiece " * 30, max_tokens=8, overlap=0)
def test_a_chunks_ids_from_its_document_are_its_own(text, max_tokens, overlap):
    chunker = Chunker(
        [TokenCounter(MINILM, max_tokens + 2), TokenCounter(SPLADE, max_tokens + 2)],
        overlap_tokens=min(overlap, (max_tokens - 1) // 2),
    )
    for c in chunker.chunk(text):
        if c.encodings is None:
            continue
        for tok, ids in zip((MINILM, SPLADE), c.encodings, strict=True):
            if isinstance(ids, list):
                assert ids == _alone(tok, c.text), (c.start, c.end, c.text)


def test_most_chunks_of_ordinary_long_text_carry_their_ids():
    """Not vacuous: prose cut in many chunks reuses its document's tokens nearly everywhere
    (every chunk ends at whitespace); a run without spaces, cut mid-word, does not."""
    chunker = Chunker([TokenCounter(MINILM, 34)], overlap_tokens=4)
    prose = " ".join(f"Sentence number {i} says something about pooling." for i in range(60))
    chunks = chunker.chunk(prose)
    assert len(chunks) > 10
    assert all(isinstance(c.encodings[0], list) for c in chunks if c.encodings)
    assert sum(c.encodings is not None for c in chunks) == len(chunks)
    glued = "tokenization" * 8  # one word of more pieces than a chunk holds: cut mid-word
    cut = Chunker([TokenCounter(MINILM, 12)], overlap_tokens=0).chunk(glued)
    assert len(cut) > 1 and all(c.encodings is None for c in cut)


def test_byte_level_bpe_is_refused():
    """A byte-level tokenizer's word carries the space before it: a span alone is tokenized
    otherwise than in its document, so no ids are taken from the document."""
    vocab = {chr(c): i for i, c in enumerate(range(33, 127))} | {"Ġ": 94}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    assert not slice_exact(tok)
    assert slice_exact(MINILM) and slice_exact(SPLADE)


@given(ids=st.lists(st.integers(1000, 20000), min_size=0, max_size=80))
@settings(max_examples=60, deadline=None)
def test_the_engine_adds_the_special_tokens_as_the_post_processor_does(ids):
    engine_tok = TextTokenizer(Tokenizer.from_file(str(minilm_path() / "tokenizer.json")), 48)
    text = MINILM.decode(ids)
    whole = _alone(MINILM, text)
    (from_ids,) = engine_tok.post_process([whole])
    (from_text,) = engine_tok.encode_batch([text])
    assert from_ids == from_text  # the same ids, truncated at 48 the same way
