"""A chunk's tokens taken from its document's, where that is exactly what tokenizing the chunk
alone gives: the engines then add the special tokens and skip tokenizing it again (a chunk
that is its whole document always carried them; now the chunks a long document is cut into
do too).

It holds for a tokenizer that splits text into words at whitespace before its model sees it,
and normalizes character by character (:func:`slice_exact`): BERT's normalizer (or none,
lowercasing, NFD / NFKD, accent stripping) and a whitespace pre-tokenizer (``BertPreTokenizer``,
``Whitespace``, ``WhitespaceSplit``), with no added token that holds whitespace or takes the
whitespace beside it. The words of a span that begins and ends at whitespace are then the
document's words in that span, and each word becomes the same tokens wherever it stands. Each
chunk is checked too (:func:`chunk_ids`): both its ends must touch whitespace or the text's
ends (a cut inside a run of text without spaces falls mid-word, where a word's continuation
tokens differ), and the document's tokens must cover its characters exactly. Byte-level BPE
(a word's token carries the space before it) and SentencePiece's ``Metaspace`` fail the first
test: their chunks are tokenized again, each on its own. ``tests/chunks/test_token_slices.py`` checks
the ids against tokenizing each chunk alone.
"""

from __future__ import annotations

import bisect
import json
import unicodedata
from typing import Any, Protocol

from tokenizers import Tokenizer

from poolq.worker.engine.execution.tokenizer import specials_around

_NORMALIZERS = frozenset({"BertNormalizer", "Lowercase", "NFD", "NFKD", "StripAccents"})
_PRE_TOKENIZERS = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})


class Spans(Protocol):
    """A document's tokens with their character spans (``chunking._SpanCounter``)."""

    @property
    def starts(self) -> list[int]: ...

    @property
    def ends(self) -> list[int]: ...

    def ids(self) -> list[int]: ...


def slice_exact(tokenizer: Tokenizer) -> bool:
    """Whether a whitespace-bounded span's tokens are the same alone as in its document, and
    the special tokens go around them as :func:`specials_around` finds."""
    spec = json.loads(tokenizer.to_str())
    pre = spec.get("pre_tokenizer") or {}
    if not _normalizer_ok(spec.get("normalizer")) or pre.get("type") not in _PRE_TOKENIZERS:
        return False
    if any(
        t.get("lstrip") or t.get("rstrip") or any(c.isspace() for c in t.get("content", ""))
        for t in spec.get("added_tokens") or ()
    ):
        return False
    return specials_around(tokenizer) is not None  # the engines add them around the ids


def _normalizer_ok(spec: Any) -> bool:
    if spec is None:
        return True
    if spec.get("type") == "Sequence":
        return all(_normalizer_ok(n) for n in spec.get("normalizers", ()))
    return spec.get("type") in _NORMALIZERS


def _separates(c: str) -> bool:
    """Whether ``c`` splits words for these tokenizers: the whitespace both BERT's normalizer
    keeps (it drops control characters but tab, newline and return) and Unicode calls white
    space (the pre-tokenizers split there). Python's ``isspace`` also counts control characters
    such as U+001C-U+001F, U+000B and U+0085, which BERT's normalizer removes, gluing the words
    on either side into one: a chunk cut there is tokenized again."""
    return c in " \t\n\r" or unicodedata.category(c) in ("Zs", "Zl", "Zp")


def chunk_ids(text: str, spans: Spans, start: int, end: int) -> list[int] | None:
    """The ids (no special tokens) of ``text[start:end]`` from its document's tokens, or None
    when the span is not one whose tokens alone are the same (see the module docstring)."""
    if (start > 0 and not _separates(text[start - 1])) or (
        end < len(text) and not _separates(text[end])
    ):
        return None
    starts, ends = spans.starts, spans.ends
    lo = bisect.bisect_left(starts, start)
    hi = bisect.bisect_left(starts, end)
    if lo >= hi or starts[lo] != start or ends[hi - 1] != end:
        return None
    if lo > 0 and ends[lo - 1] > start:  # a token straddles the chunk's start
        return None
    return spans.ids()[lo:hi]
