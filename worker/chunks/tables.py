"""Chunks of a table that each start with its header row, so that every chunk of rows can be
read alone ("Model | Torque | Interval" before "HC-40 | 40 Nm | 500 h").

A parsed file's layout names the tables that have a header row (``Layout.tables``: the header
row is ``text[start:header_end]``, its rows follow up to ``end``, one a block). A table is
chunked apart from the text around it (:func:`split_tables`; text before it in its section
that is no longer than a heading, :data:`LEAD_MAX_CHARS`, stays with its first chunk), in
chunks of whole rows (:func:`table_chunks`): the first chunk holds the header row where it
stands; each further chunk's text is the header row, a blank line, then its rows, and its span
(``start``, ``end``) is that of its rows in the document. A row too wide for a chunk with the
header is cut between cells (at ``" | "``), never inside one; only a single cell wider than a
chunk by itself is cut at its words. Whether a text fits is asked of the chunker itself
(``chunk_many`` gives one chunk for it), so every model's tokens are counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from poolq.wire.layout import Layout
from poolq.worker.chunks.chunking import Chunk

ChunkMany = Callable[[Sequence[str]], list[list[Chunk]]]
Table = tuple[int, int, int]  # start, header_end, end
ROW_SEPARATOR = "\n\n"  # between blocks (parse/layout.py), so between rows
CELL_SEPARATOR = " | "
LEAD_MAX_CHARS = 200  # text before a table in its section that stays with its first chunk


def split_tables(
    text: str, layout: Layout | None, spans: list[tuple[int, int]]
) -> list[tuple[int, int, Table | None]]:
    """``spans`` cut where a table with a header row starts and ends; a table's span carries
    it (its first may also hold a short lead-in before it)."""
    tables = layout.tables if layout is not None else ()
    if not tables:
        return [(a, b, None) for a, b in spans]
    out: list[tuple[int, int, Table | None]] = []
    for a, b in spans:
        pos = a
        for t in tables:
            start, _, end = t
            if not (a <= start < b):
                continue
            lead = text[pos:start]
            if lead.strip() and len(lead.strip()) > LEAD_MAX_CHARS:
                out.append((pos, start, None))
                pos = start
            out.append((pos, min(end, b), t))
            pos = min(end, b)
        if pos < b:
            out.append((pos, b, None))
    return out


def _fits(chunk_many: ChunkMany, text: str) -> bool:
    (chunks,) = chunk_many([text])
    return len(chunks) == 1


def table_chunks(
    text: str, span: tuple[int, int], table: Table, chunk_many: ChunkMany
) -> list[Chunk]:
    """The chunks of ``text[span[0]:span[1]]``, which holds ``table`` (see the module)."""
    start, header_end, _ = table
    a, b = span
    header = text[start:header_end]
    rows: list[tuple[int, int]] = []  # each row's span
    pos = header_end
    for piece in text[header_end:b].split(ROW_SEPARATOR):
        if piece.strip():
            rows.append((pos, pos + len(piece)))
        pos += len(piece) + len(ROW_SEPARATOR)
    out: list[Chunk] = []
    first = (a, header_end)  # the first chunk: lead-in and header row where they stand
    current: tuple[int, int] | None = first

    def worth(span: tuple[int, int]) -> bool:  # more than the header row alone
        return span != first or bool(text[a:start].strip())

    for ra, rb in rows:
        if current is not None:
            grown = (current[0], rb)
            if _fits(chunk_many, _text(text, header, grown, first_chunk=not out)):
                current = grown
                continue
            if worth(current):
                out.append(_chunk(text, header, current, first_chunk=not out))
            current = None
        if _fits(chunk_many, _text(text, header, (ra, rb), first_chunk=False)):
            current = (ra, rb)
            continue
        out += _wide_row(text, header, (ra, rb), chunk_many)
    if current is not None and (worth(current) or not out):
        out.append(_chunk(text, header, current, first_chunk=not out))
    return out


def _text(text: str, header: str, span: tuple[int, int], *, first_chunk: bool) -> str:
    own = text[span[0] : span[1]].strip()
    return own if first_chunk else f"{header}{ROW_SEPARATOR}{own}"


def _chunk(text: str, header: str, span: tuple[int, int], *, first_chunk: bool) -> Chunk:
    a, b = span
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return Chunk(0, _text(text, header, (a, b), first_chunk=first_chunk), a, b)


def _wide_row(text: str, header: str, row: tuple[int, int], chunk_many: ChunkMany) -> list[Chunk]:
    """A row too wide for one chunk with the header: cut between cells (see the module)."""
    cells: list[tuple[int, int]] = []
    pos = row[0]
    for cell in text[row[0] : row[1]].split(CELL_SEPARATOR):
        cells.append((pos, pos + len(cell)))
        pos += len(cell) + len(CELL_SEPARATOR)
    out: list[Chunk] = []
    current: tuple[int, int] | None = None
    for ca, cb in cells:
        if current is not None and _fits(
            chunk_many, _text(text, header, (current[0], cb), first_chunk=False)
        ):
            current = (current[0], cb)
            continue
        if current is not None:
            out.append(_chunk(text, header, current, first_chunk=False))
            current = None
        if _fits(chunk_many, _text(text, header, (ca, cb), first_chunk=False)):
            current = (ca, cb)
            continue
        # one cell wider than a chunk: cut at its words, by the chunker
        (pieces,) = chunk_many([text[ca:cb]])
        out += [Chunk(0, p.text, p.start + ca, p.end + ca) for p in pieces if p.text]
    if current is not None:
        out.append(_chunk(text, header, current, first_chunk=False))
    return out
