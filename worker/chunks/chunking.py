"""Token-aware chunking.

Chunks must fit every model of the collection profile (so all vectors of a point cover the same
text): a chunk's token count, plus the special tokens each tokenizer adds, stays within the
smallest max length. Boundaries prefer paragraphs, then sentences, then words; only a run of text
with no space in budget is cut at a token boundary. Consecutive chunks overlap by about
``overlap_tokens`` tokens of whole sentences/words. Each chunk keeps its exact character span.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tokenizers import Encoding, Tokenizer

from poolq.wire.documents import content_hash
from poolq.worker.chunks.ascii_twin import ascii_twin, plain_ascii
from poolq.worker.chunks.token_slices import chunk_ids, slice_exact

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
_WORD = re.compile(r"\s+")
# a text of more characters than this many per token of a chunk is tokenized with its offsets
# at once (it will most likely be cut in pieces): English runs about 4-5 characters a token
LIKELY_LONG_CHARS_PER_TOKEN = 3


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    start: int  # character span in the document text: text == doc[start:end]
    end: int
    # each counter's tokens of exactly ``text`` (no special tokens), which the engines reuse
    # instead of tokenizing the chunk again: for a chunk that is its whole (stripped) document
    # the ``Encoding``; for one of a longer document, the ids its document's tokens give where
    # they are exactly the chunk's own (``token_slices.py``), else None
    encodings: tuple[Encoding | list[int] | None, ...] | None = field(
        default=None, compare=False, repr=False
    )

    @property
    def content_hash(self) -> str:
        return content_hash(self.text)


class TokenCounter:
    """Counts a tokenizer's tokens in character spans of one text (tokenized once)."""

    def __init__(self, tokenizer: Tokenizer, max_length: int) -> None:
        tok = Tokenizer.from_str(tokenizer.to_str())
        tok.no_truncation()
        tok.no_padding()
        self._tok = tok
        self._ascii = ascii_twin(tok)  # for plain ASCII texts: the same tokens, cheaper
        self.special_tokens = len(tok.encode("", add_special_tokens=True).ids)
        self.slice_exact = slice_exact(tok)  # a chunk's ids from its document's (token_slices)
        self.max_length = max_length

    @property
    def budget(self) -> int:
        """Content tokens that fit one sequence."""
        return self.max_length - self.special_tokens

    def offsets(self, text: str) -> tuple[list[int], list[int]]:
        return _offsets(self.encode_batch([text])[0])

    def encode_batch(self, texts: list[str], *, offsets: bool = True) -> list[Encoding]:
        """One call into Rust for many texts (the GIL is released for all of it).
        ``offsets=False``: the same tokens without their character offsets (all zero), which
        ``tokenizers`` then does not track: less CPU (``encode_batch_fast``).
        Plain ASCII texts go to the tokenizer's ASCII twin (``ascii_twin.py``), the others
        to the tokenizer itself: the same tokens either way."""
        if self._ascii is None:
            return _encode(self._tok, texts, offsets)
        plain = [plain_ascii(t) for t in texts]
        if all(plain):
            return _encode(self._ascii, texts, offsets)
        if not any(plain):
            return _encode(self._tok, texts, offsets)
        pairs = list(zip(texts, plain, strict=True))
        twin = iter(_encode(self._ascii, [t for t, p in pairs if p], offsets))
        own = iter(_encode(self._tok, [t for t, p in pairs if not p], offsets))
        return [next(twin) if p else next(own) for p in plain]


def _encode(tok: Tokenizer, texts: list[str], offsets: bool) -> list[Encoding]:
    if not offsets and (fast := getattr(tok, "encode_batch_fast", None)) is not None:
        return fast(texts, add_special_tokens=False)
    return tok.encode_batch(texts, add_special_tokens=False)


def _offsets(enc: Encoding) -> tuple[list[int], list[int]]:
    offsets = enc.offsets
    return [s for s, _ in offsets], [e for _, e in offsets]


class _SpanCounter:
    """Token counts of spans of one text; the offsets (a Python object per token) are only
    built when a count below the whole text is asked for."""

    def __init__(self, encoding: Encoding, shift: int = 0, length: int | None = None) -> None:
        # the tokens of text[shift:shift + length] (offsets are moved by ``shift``)
        self.encoding = encoding
        self.shift = shift
        self.length = length
        self.total = len(encoding)  # every token of the text
        self._offsets: tuple[list[int], list[int]] | None = None
        self._ids: list[int] | None = None

    def ids(self) -> list[int]:
        """Every token's id (one list for the text, built once)."""
        if self._ids is None:
            self._ids = self.encoding.ids
        return self._ids

    @property
    def starts(self) -> list[int]:
        return self._spans()[0]

    @property
    def ends(self) -> list[int]:
        return self._spans()[1]

    def _spans(self) -> tuple[list[int], list[int]]:
        if self._offsets is None:
            starts, ends = _offsets(self.encoding)
            if self.shift:
                starts = [x + self.shift for x in starts]
                ends = [x + self.shift for x in ends]
            self._offsets = starts, ends
        return self._offsets

    def count(self, start: int, end: int) -> int:
        # tokens whose span lies within [start, end) (a token straddling a boundary counts once
        # on each side, which only over-counts: safe)
        lo = bisect.bisect_right(self.ends, start)
        hi = bisect.bisect_left(self.starts, end)
        return max(0, hi - lo)

    def cut_points(self, start: int, end: int, max_tokens: int) -> list[int]:
        """Character positions splitting [start, end) into pieces of <= max_tokens tokens."""
        lo = bisect.bisect_right(self.ends, start)
        hi = bisect.bisect_left(self.starts, end)
        return [self.starts[i] for i in range(lo + max_tokens, hi, max_tokens)]


def _segments(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    out, pos = [], start
    for m in pattern.finditer(text, start, end):
        if m.start() > pos:
            out.append((pos, m.end()))  # keep the separator with the preceding segment
        pos = m.end()
    if pos < end:
        out.append((pos, end))
    return out


class Chunker:
    def __init__(
        self,
        counters: Sequence[TokenCounter],
        *,
        max_tokens: int | None = None,
        overlap_tokens: int = 32,
    ) -> None:
        if not counters:
            raise ValueError("a chunker needs at least one tokenizer")
        budget = min(c.budget for c in counters)
        if max_tokens is not None:
            if max_tokens < 8:
                raise ValueError(f"chunking max_tokens must be >= 8, got {max_tokens}")
            budget = min(budget, max_tokens)
        if not 0 <= overlap_tokens < budget // 2:
            raise ValueError(
                f"chunking overlap_tokens must be in [0, {budget // 2}), got {overlap_tokens}"
            )
        self.counters = list(counters)
        self.max_tokens = budget
        self.overlap_tokens = overlap_tokens

    def chunk(self, text: str) -> list[Chunk]:
        return self.chunk_many([text])[0]

    def narrower(self, tokens: int) -> Chunker:
        """This chunker with ``tokens`` fewer content tokens a chunk (room for text the models
        read beside the chunk: ``context.py``)."""
        budget = max(8, self.max_tokens - tokens)
        return Chunker(
            self.counters,
            max_tokens=budget,
            overlap_tokens=min(self.overlap_tokens, max(0, budget // 2 - 1)),
        )

    def chunk_many(self, texts: Sequence[str]) -> list[list[Chunk]]:
        """:meth:`chunk` of each text, each tokenizer called once for all of them. Each text
        is tokenized without its leading and trailing whitespace (no chunk holds it): a text
        that fits one chunk is then tokenized exactly as its chunk, and the chunk carries those
        tokens (:attr:`Chunk.encodings`) so that no engine tokenizes it again; a longer text's
        chunks carry their share of its tokens where that share is exactly their own
        (``token_slices.py``)."""
        texts = list(texts)
        spans = [_strip(t, 0, len(t)) for t in texts]
        stripped = [t[a:b] for t, (a, b) in zip(texts, spans, strict=True)]
        # only a text cut in pieces needs the tokens' offsets: a text far longer (in characters)
        # than a chunk's tokens is tokenized with them; the others without (cheaper),
        # and again with them in the rare case one turns out too long all the same
        wide = LIKELY_LONG_CHARS_PER_TOKEN * self.max_tokens
        encodings = [
            _encode_split(c, stripped, [len(t) > wide for t in stripped]) for c in self.counters
        ]
        long = [
            i
            for i in range(len(texts))
            if len(stripped[i]) <= wide and any(len(e[i]) > self.max_tokens for e in encodings)
        ]
        if long:
            for c, e in zip(self.counters, encodings, strict=True):
                redone = c.encode_batch([stripped[i] for i in long])
                for i, enc in zip(long, redone, strict=True):
                    e[i] = enc
        return [
            self._chunk(text, [_SpanCounter(e[i], a, b - a) for e in encodings])
            for i, (text, (a, b)) in enumerate(zip(texts, spans, strict=True))
        ]

    def _chunk(self, text: str, spans: list[_SpanCounter], shortcut: bool = True) -> list[Chunk]:
        # the usual case: the whole text fits, one chunk (what the general path finds, without
        # the offsets of every token)
        if shortcut and all(s.total <= self.max_tokens for s in spans):
            a, b = _strip(text, 0, len(text))
            whole = all(s.shift == a and s.length == b - a for s in spans)
            encodings = tuple(s.encoding for s in spans) if whole else None
            return [Chunk(0, text[a:b], a, b, encodings)]

        def tokens(a: int, b: int) -> int:
            return max(s.count(a, b) for s in spans)

        pieces = self._pieces(text, 0, len(text), tokens, spans, level=0)
        chunks: list[tuple[int, int]] = []
        i = 0
        while i < len(pieces):
            start = pieces[i][0]
            j = i
            while j + 1 < len(pieces) and tokens(start, pieces[j + 1][1]) <= self.max_tokens:
                j += 1
            chunks.append((start, pieces[j][1]))
            if j + 1 >= len(pieces):
                break
            # next chunk starts with whole trailing pieces worth <= overlap_tokens (at least one
            # new piece is always added, so this terminates)
            k = j + 1
            while k - 1 > i and tokens(pieces[k - 1][0], pieces[j][1]) <= self.overlap_tokens:
                k -= 1
            i = k
        out = []
        exact = [c.slice_exact for c in self.counters]
        for idx, (a, b) in enumerate(chunks):
            a, b = _strip(text, a, b)
            ids = tuple(
                chunk_ids(text, s, a, b) if e else None for s, e in zip(spans, exact, strict=True)
            )
            out.append(
                Chunk(idx, text[a:b], a, b, ids if any(i is not None for i in ids) else None)
            )
        return out

    def _pieces(
        self,
        text: str,
        start: int,
        end: int,
        tokens: Callable[[int, int], int],
        spans: list[_SpanCounter],
        level: int,
    ) -> list[tuple[int, int]]:
        """Split [start, end) into pieces that each fit the budget, coarsest boundaries first."""
        if tokens(start, end) <= self.max_tokens:
            return [(start, end)]
        patterns = (_PARAGRAPH, _SENTENCE, _WORD)
        if level < len(patterns):
            segs = _segments(text, start, end, patterns[level])
            if len(segs) > 1:
                out = []
                for a, b in segs:
                    out.extend(self._pieces(text, a, b, tokens, spans, level + 1))
                return out
            return self._pieces(text, start, end, tokens, spans, level + 1)
        # no boundary left: cut at token boundaries of the tokenizer that counts the most tokens
        worst = max(spans, key=lambda s: s.count(start, end))
        cuts = [start, *worst.cut_points(start, end, self.max_tokens), end]
        return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def _encode_split(
    counter: TokenCounter, texts: list[str], with_offsets: list[bool]
) -> list[Encoding]:
    """``texts`` tokenized, with offsets where ``with_offsets`` says so (two calls into Rust)."""
    slow = [t for t, w in zip(texts, with_offsets, strict=True) if w]
    quick = [t for t, w in zip(texts, with_offsets, strict=True) if not w]
    done_slow = iter(counter.encode_batch(slow) if slow else ())
    done_quick = iter(counter.encode_batch(quick, offsets=False) if quick else ())
    return [next(done_slow) if w else next(done_quick) for w in with_offsets]


def _strip(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b
