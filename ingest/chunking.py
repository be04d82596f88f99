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
from dataclasses import dataclass

from tokenizers import Tokenizer

from poolq.ingest.documents import content_hash

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
_WORD = re.compile(r"\s+")


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    start: int  # character span in the document text: text == doc[start:end]
    end: int

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
        self.special_tokens = len(tok.encode("", add_special_tokens=True).ids)
        self.max_length = max_length

    @property
    def budget(self) -> int:
        """Content tokens that fit one sequence."""
        return self.max_length - self.special_tokens

    def offsets(self, text: str) -> tuple[list[int], list[int]]:
        enc = self._tok.encode(text, add_special_tokens=False)
        return [s for s, _ in enc.offsets], [e for _, e in enc.offsets]


class _SpanCounter:
    def __init__(self, counter: TokenCounter, text: str) -> None:
        self.starts, self.ends = counter.offsets(text)

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
        spans = [_SpanCounter(c, text) for c in self.counters]

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
        for idx, (a, b) in enumerate(chunks):
            a, b = _strip(text, a, b)
            out.append(Chunk(idx, text[a:b], a, b))
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


def _strip(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b
