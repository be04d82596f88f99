"""Where a parsed document's text came from: the ``layout`` an ingest job's document carries.

The parse stage (``worker/parse/``) joins a file's blocks into one ``text`` and describes it
here; a document sent as text has no layout. ``sections`` and ``pages`` are step functions over
character positions of ``text``: a section (its heading path, outermost first) or a page (the
1-based physical page of a PDF, the slide of a PPTX) runs from its start to the next one's.
On the wire (msgpack or JSON)::

    "layout": {"source": str, "title": str | null, "mime": str,
               "sections": [[start, [heading, ...]], ...], "pages": [[start, page], ...],
               "file_hash": str | null, "ocr"?: [page, ...], "tables"?: [[start, header_end,
               end], ...]}

``file_hash`` is ``sha256(bytes):parser version``: a reindex finds an unchanged file by it
without parsing it again. ``ocr`` lists the pages whose text was read by OCR, ``tables`` the
spans of the tables that have a header row (``text[start:header_end]`` is the header row, the
rows follow up to ``end``); each is written only when not empty.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

MAX_HEADING_DEPTH = 16
MAX_FIELD_CHARS = 4096  # source, title, one heading


class LayoutError(ValueError):
    """A layout that does not describe its text (names the field)."""


@dataclass(frozen=True)
class Layout:
    mime: str
    source: str | None = None
    title: str | None = None
    sections: tuple[tuple[int, tuple[str, ...]], ...] = ()
    pages: tuple[tuple[int, int], ...] = ()
    file_hash: str | None = None
    ocr: tuple[int, ...] = ()
    tables: tuple[tuple[int, int, int], ...] = ()

    def ocr_in(self, start: int, end: int) -> bool:
        """Whether text[start:end] comes from a page read by OCR."""
        if not self.ocr:
            return False
        a, b = self.page_range(start, end)
        return a is not None and any(a <= p <= (b or a) for p in self.ocr)

    def headings_at(self, pos: int) -> tuple[str, ...]:
        i = bisect.bisect_right(self._section_starts, pos) - 1
        return self.sections[i][1] if i >= 0 else ()

    def page_at(self, pos: int) -> int | None:
        i = bisect.bisect_right(self._page_starts, pos) - 1
        return self.pages[i][1] if i >= 0 else None

    def page_range(self, start: int, end: int) -> tuple[int | None, int | None]:
        """The pages text[start:end] comes from (``end`` exclusive)."""
        if not self.pages:
            return None, None
        return self.page_at(start), self.page_at(max(start, end - 1))

    @cached_property
    def _section_starts(self) -> list[int]:
        return [s for s, _ in self.sections]

    @cached_property
    def _page_starts(self) -> list[int]:
        return [s for s, _ in self.pages]

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "mime": self.mime,
            "source": self.source,
            "title": self.title,
            "sections": [[s, list(h)] for s, h in self.sections],
            "pages": [[s, p] for s, p in self.pages],
            "file_hash": self.file_hash,
        }
        if self.ocr:
            wire["ocr"] = list(self.ocr)
        if self.tables:
            wire["tables"] = [list(t) for t in self.tables]
        return wire

    def canonical(self) -> str:
        """What the document's hash covers besides its text (not ``file_hash``: the same text
        and layout from a re-saved file is the same document)."""
        wire = self.to_wire()
        del wire["file_hash"]
        return json.dumps(wire, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_wire(cls, raw: Any, text_chars: int) -> Layout:
        """Checked: every field of the right type, starts ascending within the text."""
        if not isinstance(raw, dict):
            raise LayoutError(f"expected an object, got {type(raw).__name__}")
        known = {"mime", "source", "title", "sections", "pages", "file_hash", "ocr", "tables"}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise LayoutError(f"{unknown[0]}: unknown field")
        mime = raw.get("mime")
        if not isinstance(mime, str) or not mime or len(mime) > 255:
            raise LayoutError(f"mime: expected a non-empty string, got {mime!r}")
        for name in ("source", "title", "file_hash"):
            v = raw.get(name)
            if v is not None and (not isinstance(v, str) or len(v) > MAX_FIELD_CHARS):
                raise LayoutError(
                    f"{name}: expected a string of <= {MAX_FIELD_CHARS} chars or null"
                )
        sections = tuple(_steps(raw.get("sections") or [], "sections", text_chars, _headings))
        pages = tuple(_steps(raw.get("pages") or [], "pages", text_chars, _page))
        ocr = raw.get("ocr") or []
        if not isinstance(ocr, list | tuple):
            raise LayoutError("ocr: expected a list of page numbers")
        ocr_pages = tuple(_page(p, f"ocr[{i}]") for i, p in enumerate(ocr))
        tables = _tables(raw.get("tables") or [], text_chars)
        return cls(
            mime, raw.get("source"), raw.get("title"), sections, pages, raw.get("file_hash"),
            ocr_pages, tables,
        )  # fmt: skip


def _tables(raw: Any, text_chars: int) -> tuple[tuple[int, int, int], ...]:
    if not isinstance(raw, list | tuple):
        raise LayoutError("tables: expected a list of [start, header_end, end]")
    out: list[tuple[int, int, int]] = []
    last = 0
    for i, t in enumerate(raw):
        ok = isinstance(t, list | tuple) and len(t) == 3
        ok = ok and all(isinstance(x, int) and not isinstance(x, bool) for x in t)
        if not ok or not last <= t[0] < t[1] <= t[2] <= text_chars:
            raise LayoutError(
                f"tables[{i}]: expected [start, header_end, end] ascending within the text's "
                f"{text_chars} characters, after the table before, got {t!r}"
            )
        out.append((t[0], t[1], t[2]))
        last = t[2]
    return tuple(out)


def _headings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or len(value) > MAX_HEADING_DEPTH:
        raise LayoutError(f"{where}: expected a list of at most {MAX_HEADING_DEPTH} headings")
    if not all(isinstance(h, str) and len(h) <= MAX_FIELD_CHARS for h in value):
        raise LayoutError(f"{where}: every heading must be a string of <= {MAX_FIELD_CHARS} chars")
    return tuple(value)


def _page(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LayoutError(f"{where}: expected a page number >= 1, got {value!r}")
    return value


def _steps(raw: Any, name: str, text_chars: int, check: Any) -> list[tuple[int, Any]]:
    if not isinstance(raw, list | tuple):
        raise LayoutError(f"{name}: expected a list of [start, value] pairs")
    out: list[tuple[int, Any]] = []
    last = -1
    for i, step in enumerate(raw):
        where = f"{name}[{i}]"
        if not isinstance(step, list | tuple) or len(step) != 2:
            raise LayoutError(f"{where}: expected [start, value]")
        start = step[0]
        if isinstance(start, bool) or not isinstance(start, int) or not last < start <= text_chars:
            raise LayoutError(
                f"{where}: start {start!r} must be an integer above {last} and at most "
                f"{text_chars} (the text's length)"
            )
        last = start
        out.append((start, check(step[1], where)))
    return out
