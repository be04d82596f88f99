"""A BERT tokenizer's ASCII twin (``worker/chunks/ascii_twin.py``) gives the tokenizer's own
ids and offsets for every text it is sent, MiniLM's and SPLADE's; texts it would get wrong
(controls BERT's normalizer drops, anything beyond ASCII) go to the tokenizer itself; and
tokenizers where it would not be exact get none."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from poolq.worker.chunks.ascii_twin import ascii_twin, plain_ascii
from poolq.worker.chunks.chunking import TokenCounter
from tests.chunks.test_chunking import MINILM, SPLADE

# every ASCII character: letters of both cases, digits, punctuation, whitespace and the
# controls BERT's normalizer drops (which the twin must never be sent)
ASCII = st.text(st.characters(max_codepoint=0x7F), max_size=200)
MIXED = st.text(
    st.one_of(st.characters(max_codepoint=0x7F), st.sampled_from("éÜ東\u0301\xa0\u3000\x85")),
    max_size=120,
)


def _same(a, b) -> None:
    assert [e.ids for e in a] == [e.ids for e in b]
    assert [e.offsets for e in a] == [e.offsets for e in b]


def _untruncated(tok: Tokenizer) -> Tokenizer:
    own = Tokenizer.from_str(tok.to_str())
    own.no_truncation()
    return own


PAIRS = [(TokenCounter(tok, 512), _untruncated(tok)) for tok in (MINILM, SPLADE)]
TWINS = [(ascii_twin(tok), tok) for tok in (MINILM, SPLADE)]


@settings(max_examples=300, deadline=None)
@given(st.lists(ASCII, min_size=1, max_size=6))
@example(["Tab\tand\nnew\r\nline, UPPER lower 3.14 (x) don't"])
@example(["glued\x0bby\x1ca\x7fcontrol\x00"])  # dropped by BERT's normalizer: not plain
def test_the_twin_tokenizes_plain_ascii_as_the_tokenizer(texts):
    for twin, tok in TWINS:
        assert twin is not None
        plain = [t for t in texts if plain_ascii(t)]
        _same(twin.encode_batch(plain, add_special_tokens=False),
              tok.encode_batch(plain, add_special_tokens=False))  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(MIXED, min_size=1, max_size=8), st.booleans())
def test_a_counter_gives_the_tokenizers_tokens_for_any_mix(texts, offsets):
    for counter, own in PAIRS:
        got = counter.encode_batch(texts, offsets=offsets)
        want = own.encode_batch(texts, add_special_tokens=False)
        assert [e.ids for e in got] == [e.ids for e in want]
        if offsets:
            _same(got, want)


def test_only_plain_ascii_goes_to_the_twin():
    assert plain_ascii("Hello,\tworld\r\n42!")
    for text in ("caf\xe9", "a\x0bb", "a\x1cb", "\x7f", "\x00", "東京"):
        assert not plain_ascii(text)


def _with(tok: Tokenizer, **changes) -> Tokenizer:
    spec = json.loads(tok.to_str())
    for key, value in changes.items():
        spec[key] = value
    return Tokenizer.from_str(json.dumps(spec))


def test_no_twin_where_it_would_not_be_exact():
    spec = json.loads(MINILM.to_str())
    assert ascii_twin(_with(MINILM, normalizer={"type": "Lowercase"})) is None  # nothing to gain
    assert ascii_twin(_with(MINILM, pre_tokenizer={"type": "Metaspace", "replacement": "▁",
                                                  "prepend_scheme": "always", "split": True})) is None  # fmt: skip
    spaced = [*spec["added_tokens"], {**spec["added_tokens"][0], "id": 30522, "content": "a b",
                                      "special": False, "normalized": True}]  # fmt: skip
    assert ascii_twin(_with(MINILM, added_tokens=spaced)) is None
    cased = _with(MINILM, normalizer={**spec["normalizer"], "lowercase": False})
    twin = ascii_twin(cased)
    assert twin is not None and twin.normalizer is None
    text = "Cased Words\tSTAY cased"
    _same(twin.encode_batch([text], add_special_tokens=False),
          cased.encode_batch([text], add_special_tokens=False))  # fmt: skip
