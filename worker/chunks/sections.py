"""Chunks that follow a parsed document's sections: no chunk straddles two sections when it
need not.

A document with a layout (``wire/layout.py``) is chunked section by section, all sections of
all documents in one :meth:`Chunker.chunk_many` call, and each chunk's span moved back into the
document's text. A section that holds nothing but its heading (a chapter title followed at once
by its first subsection) joins the section after it when that one lies under it, so that no
chunk is a bare heading; the merged chunk cites the deeper heading path. A document without a
layout is chunked whole, as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace

from poolq.wire.documents import Document
from poolq.wire.layout import Layout
from poolq.worker.chunks.chunking import Chunk

# a section this short (characters, after stripping) that is only a heading joins the next one
HEADING_ONLY_MAX_CHARS = 200


def section_spans(text: str, layout: Layout | None) -> list[tuple[int, int]]:
    """``[start, end)`` spans of ``text`` to chunk apart, in order, covering it."""
    if layout is None or len(layout.sections) < 2:
        return [(0, len(text))]
    bounds = [s for s, _ in layout.sections]
    if bounds[0] != 0:
        bounds.insert(0, 0)
    bounds.append(len(text))
    spans = [(a, b) for a, b in itertools.pairwise(bounds) if b > a]
    merged: list[tuple[int, int]] = []
    pending: int | None = None  # start of heading-only sections waiting to join the next
    for a, b in spans:
        start = a if pending is None else pending
        here = layout.headings_at(a)
        nxt = layout.headings_at(b) if b < len(text) else None
        body = text[a:b].strip()
        heading_only = bool(here) and body == here[-1].strip()
        if (
            heading_only
            and nxt is not None
            and len(body) <= HEADING_ONLY_MAX_CHARS
            and nxt[: len(here)] == here
        ):
            pending = start
            continue
        merged.append((start, b))
        pending = None
    if pending is not None:
        merged.append((pending, len(text)))
    return merged


def chunk_documents(
    chunk_many: Callable[[Sequence[str]], list[list[Chunk]]], docs: Sequence[Document]
) -> list[list[Chunk]]:
    """Each document's chunks (indices from 0, spans in its own text), all texts cut by one
    call of ``chunk_many`` (:meth:`Chunker.chunk_many`)."""
    pieces: list[str] = []
    where: list[list[tuple[int, int]]] = []
    for d in docs:
        spans = section_spans(d.text, d.layout)
        where.append(spans)
        pieces += [d.text[a:b] for a, b in spans]
    chunked = chunk_many(pieces)
    out: list[list[Chunk]] = []
    k = 0
    for spans in where:
        chunks: list[Chunk] = []
        for a, _ in spans:
            for c in chunked[k]:
                if not c.text:  # (a blank section)
                    continue
                chunks.append(replace(c, index=len(chunks), start=c.start + a, end=c.end + a))
            k += 1
        out.append(chunks)
    return out
