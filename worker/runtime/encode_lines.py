"""``poolq encode``'s input and its tally: the options of a run, its summary, and the JSONL
lines read as ``(line number, id, text)`` in chunks (``--task score``: ``(line number, id,
(query, text))``), a malformed line reported on stderr with its number and skipped. No torch here: both the engine's encode (``offline_encode.py``) and the
one that runs a cached OpenVINO graph itself (``direct_encode.py``) read their input this way."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from poolq.worker.engine.cpu.int8_report import QualityReport

CHUNK_LINES = 256


@dataclass(frozen=True)
class EncodeOptions:
    tasks: tuple[str, ...]
    dimensions: int | None = None
    normalize: bool = True
    truncate: bool = True
    prompt_name: str | None = None

    @property
    def pairs(self) -> bool:
        """``--task score``: lines are ``{"id", "query", "text"}`` pairs."""
        return self.tasks == ("score",)


@dataclass
class EncodeSummary:
    lines: int = 0
    written: int = 0
    errors: int = 0
    tokens: int = 0
    truncated: int = 0
    gate: QualityReport | None = None  # the int8 quality gate at load (calibration sample)
    quality: QualityReport | None = None  # --report-quality: int8 vs float32 on this file
    cpu: str | None = None  # the intra-op thread count at the start, and why (cpu_budget.py)


def parse_line(lineno: int, line: str, *, pairs: bool = False) -> tuple[Any, Any]:
    """``(id, text)``, or with ``pairs`` ``(id, (query, text))``."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"line {lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    fields = "'id', 'query' and 'text'" if pairs else "'id' and 'text'"
    if not isinstance(obj, dict):
        raise ValueError(
            f"line {lineno}: expected an object with {fields}, got {type(obj).__name__}"
        )
    if "id" not in obj:
        raise ValueError(f"line {lineno}: missing field 'id'")
    if not isinstance(obj["id"], str | int) or isinstance(obj["id"], bool):
        raise ValueError(
            f"line {lineno}: field 'id' must be a string or an integer, got {type(obj['id']).__name__}"
        )
    for name in ("query", "text") if pairs else ("text",):
        if name not in obj:
            raise ValueError(f"line {lineno} (id {obj['id']!r}): missing field {name!r}")
        if not isinstance(obj[name], str):
            raise ValueError(
                f"line {lineno} (id {obj['id']!r}): field {name!r} must be a string, got "
                f"{type(obj[name]).__name__}"
            )
    return obj["id"], ((obj["query"], obj["text"]) if pairs else obj["text"])


def line_chunks(
    lines: Iterator[str],
    summary: EncodeSummary,
    err: IO[str],
    *,
    pairs: bool = False,
    size: int = CHUNK_LINES,
) -> Iterator[list[tuple[int, Any, Any]]]:
    chunk: list[tuple[int, Any, Any]] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        summary.lines += 1
        try:
            doc_id, text = parse_line(lineno, line, pairs=pairs)
        except ValueError as exc:
            summary.errors += 1
            print(f"poolq encode: {exc}; skipped", file=err)
            continue
        chunk.append((lineno, doc_id, text))
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
