"""What a parsed file's chunk is encoded with: its title and heading path before its text.

A chunk of a manual often does not name its subject ("Tighten to 40 Nm."): its document's title
and its section's headings do. The models encode ``"Pump manual › Installing\\n\\nTighten to 40
Nm."``; the point's payload keeps the chunk's own text (what a hit shows and cites). Chunks of a
parsed file are cut :data:`CONTEXT_TOKENS` shorter than the models allow, and the context is
cut to fit that room by every model's tokenizer (:func:`fitted`: characters alone do not
bound tokens; a long part number is many tokens), so it never pushes a chunk past a model's
length. A document sent as text is encoded as it is.

Tokenized once: the context is tokenized once per section (when it is fitted), and a chunk's
tokens (``Chunk.encodings``) follow the context's as they are, for every tokenizer whose tokens
of a whitespace-bounded span are its own (``token_slices.slice_exact``: the break between
context and text is whitespace, no token of either side): the engines then only add the
special tokens, as for a document sent as text (:func:`encoder_inputs`). Other tokenizers
(byte-level BPE, SentencePiece) tokenize the context and the chunk again, in the engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tokenizers import Encoding

from poolq.wire.layout import Layout

if TYPE_CHECKING:
    from poolq.wire.documents import Document
    from poolq.worker.chunks.chunking import Chunk, TokenCounter

# per model, a chunk's tokens without special tokens, or None (``Chunk.encodings``)
Encodings = tuple[Encoding | list[int] | None, ...]

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


@dataclass(frozen=True)
class Fitted:
    """A context cut to its room (:func:`fitted`), and per counter its tokens where a chunk's
    may follow them as they are (``slice_exact``), else None."""

    text: str
    ids: tuple[list[int] | None, ...]


def fitted(
    context: str, counters: Sequence[TokenCounter], room_tokens: int = CONTEXT_TOKENS
) -> Fitted:
    """``context`` cut at words (then ending in "…") until every tokenizer counts it, and the
    break after it, within ``room_tokens``; "" if not even its first word fits."""
    return fitted_many([context], counters, room_tokens)[context]


def fitted_many(
    contexts: Sequence[str], counters: Sequence[TokenCounter], room_tokens: int = CONTEXT_TOKENS
) -> dict[str, Fitted]:
    """:func:`fitted` of each of ``contexts``, their whole texts tokenized in one call per
    tokenizer (the few that are too long are then cut one by one)."""
    unique = list(dict.fromkeys(contexts))
    if not unique:
        return {}
    whole = [[e.ids for e in c.encode_batch(unique, offsets=False)] for c in counters]
    return {
        context: _fit(context, counters, room_tokens, [ids[k] for ids in whole])
        for k, context in enumerate(unique)
    }


def _fit(
    context: str, counters: Sequence[TokenCounter], room_tokens: int, ids: list[list[int]] | None
) -> Fitted:
    words = context.split(" ")
    n = len(words)
    while n > 0:
        text = context if n == len(words) else " ".join([*words[:n], "…"])
        if ids is None:
            ids = [c.encode_batch([text], offsets=False)[0].ids for c in counters]
        tokens = max(len(i) for i in ids)
        if tokens + BREAK_TOKENS <= room_tokens:
            exact = (i if c.slice_exact else None for c, i in zip(counters, ids, strict=True))
            return Fitted(text, tuple(exact))
        # drop words in proportion to the excess, at least one, and count again
        keep = n * room_tokens / (tokens + BREAK_TOKENS)
        n, ids = min(n - 1, int(keep)), None
    return Fitted("", tuple(None for _ in counters))


def with_context(context: Fitted, encodings: Encodings | None) -> Encodings | None:
    """A chunk's tokens after its context's (per model; None where either side has none)."""
    if encodings is None:
        return None
    out = tuple(
        None if pre is None or e is None else pre + (e.ids if isinstance(e, Encoding) else e)
        for pre, e in zip(context.ids, encodings, strict=True)
    )
    return out if any(e is not None for e in out) else None


def encoder_inputs(
    docs: Sequence[Document], chunked: Sequence[Sequence[Chunk]], counters: Sequence[TokenCounter]
) -> list[list[tuple[str, Encodings | None]]]:
    """Per document, per chunk, what the models encode (its context, then its text) and its
    tokens (see the module docstring). Chunks share their file's and section's contexts: each
    is fitted and tokenized once, all of them in one call per tokenizer."""
    contexts = [
        [context_of(d.layout, c.start) for c in cs] for d, cs in zip(docs, chunked, strict=True)
    ]
    done = fitted_many([x for xs in contexts for x in xs if x], counters)
    out = []
    for chunks, of_chunks in zip(chunked, contexts, strict=True):
        inputs = []
        for c, context in zip(chunks, of_chunks, strict=True):
            fit = done[context] if context else None
            if fit is None or not fit.text:
                inputs.append((c.text, c.encodings))
            else:
                inputs.append((encoded_text(fit.text, c.text), with_context(fit, c.encodings)))
        out.append(inputs)
    return out
