"""Chunks that follow a parsed document's sections: no chunk straddles two sections when it
need not.

A document with a layout (``wire/layout.py``) is chunked section by section, all sections of
all documents in one :meth:`Chunker.chunk_many` call, and each chunk's span moved back into the
document's text. A section that holds nothing but its heading (a chapter title followed at once
by its first subsection) joins the section after it when that one lies under it, so that no
chunk is a bare heading; the merged chunk cites the deeper heading path. A document without a
layout is chunked as one text.

Only a section with a context (its file's title or a heading path: ``context.py``) is cut
shorter, to leave the models room for that context; a section with none, such as a plain text
file's (no title, no headings), is cut as long as the same text sent as text: room left empty
would only make more and shorter chunks, which sparse and fused search rank worse on plain
text (``eval_search.py --set plain``, docs/performance.md).

Pages are boundaries too: a chunk of a PDF or a PPTX cites the one page (or slide) its text is
on, which is what a reader opens. A page with less text than :data:`SHORT_PAGE_CHARS` (a
chapter's last lines, a sparse slide) joins the page after it in its section, so that no chunk
is a scrap; such a chunk cites both pages, and never more than two.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import replace

from poolq.wire.documents import Document
from poolq.wire.layout import Layout
from poolq.worker.chunks.chunking import Chunk
from poolq.worker.chunks.context import context_of
from poolq.worker.chunks.tables import Table, split_tables, table_chunks

# a section this short (characters, after stripping) that is only a heading joins the next one
HEADING_ONLY_MAX_CHARS = 200
# a page with less text than this in a section joins the next page of the section
SHORT_PAGE_CHARS = 300


def section_spans(text: str, layout: Layout | None) -> list[tuple[int, int]]:
    """``[start, end)`` spans of ``text`` to chunk apart, in order, covering it: sections, each
    cut at its page boundaries (:func:`page_spans`)."""
    out: list[tuple[int, int]] = []
    for a, b in _sections(text, layout):
        out += page_spans(text, layout, a, b)
    return out


def page_spans(text: str, layout: Layout | None, start: int, end: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut where a page begins; a short page joins the next one."""
    if layout is None or len(layout.pages) < 2:
        return [(start, end)]
    cuts = [s for s, _ in layout.pages if start < s < end]
    out: list[tuple[int, int]] = []
    pages: list[int] = []  # pages in each piece of ``out``
    a, n = start, 1
    for b in [*cuts, end]:
        if b < end and n < 2 and len(text[a:b].strip()) < SHORT_PAGE_CHARS:
            n += 1  # a short page: it joins the next (two pages at most)
            continue
        out.append((a, b))
        pages.append(n)
        a, n = b, 1
    last = out[-1]
    if len(out) > 1 and pages[-2] == 1 and len(text[last[0] : last[1]].strip()) < SHORT_PAGE_CHARS:
        out[-2:] = [(out[-2][0], last[1])]  # a short last page joins the one before
    return out


def _sections(text: str, layout: Layout | None) -> list[tuple[int, int]]:
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


ChunkMany = Callable[[Sequence[str]], list[list[Chunk]]]


def chunk_documents(
    chunk_many: ChunkMany, docs: Sequence[Document], parsed_chunk_many: ChunkMany | None = None
) -> list[list[Chunk]]:
    """Each document's chunks (indices from 0, spans in its own text): the texts sent as text,
    and the sections of parsed files without a context, cut by one call of ``chunk_many``
    (:meth:`Chunker.chunk_many`); the sections with a context by one of ``parsed_chunk_many``
    (default the same: a chunker that leaves room for the context, ``context.py``)."""
    parsed_chunk_many = parsed_chunk_many or chunk_many
    plain: list[str] = []
    parsed: list[str] = []
    # per document: (span start, has a context, its table: chunked apart, tables.py)
    where: list[list[tuple[int, bool, tuple[str, Table] | None]]] = []
    for d in docs:
        spans = split_tables(d.text, d.layout, section_spans(d.text, d.layout))
        starts = []
        for a, b, table in spans:
            context = d.layout is not None and bool(context_of(d.layout, a))
            starts.append((a, context, None if table is None else (d.text[a:b], table)))
            if table is None:
                (parsed if context else plain).append(d.text[a:b])
        where.append(starts)
    plain_chunks = iter(chunk_many(plain) if plain else [])
    parsed_chunks = iter(parsed_chunk_many(parsed) if parsed else [])
    out: list[list[Chunk]] = []
    for starts in where:
        chunks: list[Chunk] = []
        for a, context, tabled in starts:
            if tabled is not None:
                text, (ts, th, te) = tabled
                table = (ts - a, th - a, te - a)  # (within the span's own text)
                fits = parsed_chunk_many if context else chunk_many
                for c in table_chunks(text, (0, len(text)), table, fits):
                    chunks.append(replace(c, index=len(chunks), start=c.start + a, end=c.end + a))
                continue
            for c in next(parsed_chunks if context else plain_chunks):
                if not c.text:  # (a blank section)
                    continue
                chunks.append(replace(c, index=len(chunks), start=c.start + a, end=c.end + a))
        out.append(chunks)
    return out
