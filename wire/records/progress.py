"""The progress of a running ingest job: a Redis hash under ``JOB_PROGRESS_KEY`` (written by
``worker/runtime/job_progress.py``, read by ``ingest/job_progress.py``). Hash values are bytes,
so the record has its own hash encoding (:meth:`to_hash`/:meth:`from_hash`) beside the map."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from poolq.wire.records.record import WireError, WireRecord


@dataclass(frozen=True)
class JobProgressRecord(WireRecord):
    """``documents`` in the job, ``done`` (finished: written, skipped or refused), ``chunks``
    chunked, ``points`` written, ``errors`` (refused documents), ``skipped`` (unchanged);
    a parse job's ``parsed`` files, their ``pages`` and the pages among them read by OCR
    (``ocr_pages``, counted as each is read); milliseconds spent chunking, encoding
    and writing (``chunk_ms``, ``encode_ms``, ``write_ms``: a job's parts overlap, so these are
    sums of each part's time), and ``updated_at`` (unix seconds of the last write, set by the
    writer: how long a job has not moved)."""

    wire_name = "job progress"

    documents: int = 0
    done: int = 0
    chunks: int = 0
    points: int = 0
    errors: int = 0
    skipped: int = 0
    parsed: int = 0
    pages: int = 0
    ocr_pages: int = 0
    chunk_ms: int = 0
    encode_ms: int = 0
    write_ms: int = 0
    updated_at: int = 0

    def to_hash(self) -> dict[str, int]:
        """The mapping for ``HSET`` (Redis stores each value as its decimal text)."""
        return self.to_wire()

    @classmethod
    def from_hash(cls, raw: dict[Any, Any], *, strict: bool = False) -> JobProgressRecord:
        """The record ``HGETALL`` returned (bytes keys and values). A value that is no integer
        raises :class:`WireError` naming the field."""
        data: dict[str, Any] = {}
        for k, v in raw.items():
            name = k.decode() if isinstance(k, bytes) else str(k)
            try:
                data[name] = int(v)
            except (TypeError, ValueError):
                raise WireError(
                    f"{cls.wire_name}: {name}: expected an integer, got {v!r}"
                ) from None
        return cls.from_wire(data, strict=strict)
