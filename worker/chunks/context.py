"""What a parsed file's chunk is encoded with: its title and heading path before its text.

A chunk of a manual often does not name its subject ("Tighten to 40 Nm."): its document's title
and its section's headings do. The models encode ``"Pump manual › Installing\\n\\nTighten to 40
Nm."``; the point's payload keeps the chunk's own text (what a hit shows and cites). Chunks of a
parsed file are cut :data:`CONTEXT_TOKENS` shorter than the models allow, and the context is
cut to fit that room by every model's tokenizer (:func:`fit_context`: characters alone do not
bound tokens; a long part number is many tokens), so it never pushes a chunk past a model's
length. A document sent as text is encoded as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from poolq.wire.layout import Layout

if TYPE_CHECKING:
    from poolq.worker.chunks.chunking import TokenCounter

CONTEXT_TOKENS = 32  # room kept in a parsed file's chunks for their context
CONTEXT_CHARS = 100  # the context is cut at a word to about this many characters (~25 tokens)
SEPARATOR = " › "
BREAK_TOKENS = 2  # what "\n\n" between context and text may cost (none for WordPiece)


def context_of(layout: Layout | None, start: int) -> str:
    """The title and heading path of the chunk starting at ``start``, or "" (none, or a
    document sent as text)."""
    if layout is None:
        return ""
    parts: list[str] = []
    for part in (layout.title, *layout.headings_at(start)):
        text = " ".join((part or "").split())
        if text and (not parts or text.casefold() not in parts[-1].casefold()):
            parts.append(text)
    context = SEPARATOR.join(parts)
    if len(context) > CONTEXT_CHARS:
        context = context[:CONTEXT_CHARS].rsplit(" ", 1)[0] + " …"
    return context


def encoded_text(context: str, text: str) -> str:
    """The text the models encode for a chunk with ``context``."""
    return f"{context}\n\n{text}" if context else text


def fit_context(
    context: str, counters: Sequence[TokenCounter], room_tokens: int = CONTEXT_TOKENS
) -> str:
    """``context`` cut at words (then ending in "…") until every tokenizer counts it, and the
    break after it, within ``room_tokens``; "" if not even its first word fits."""
    words = context.split(" ")
    n = len(words)
    while n > 0:
        text = context if n == len(words) else " ".join([*words[:n], "…"])
        tokens = max(len(c.encode_batch([text], offsets=False)[0].ids) for c in counters)
        if tokens + BREAK_TOKENS <= room_tokens:
            return text
        # drop words in proportion to the excess, at least one, and count again
        keep = n * room_tokens / (tokens + BREAK_TOKENS)
        n = min(n - 1, int(keep))
    return ""
