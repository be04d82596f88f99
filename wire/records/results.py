"""What an ingest job returns (arq stores it as the job's result; ``poolq status JOB_ID`` and
:meth:`PoolqClient.wait` read it back)::

    {"points": n, "documents": n, "errors": [{"id", "field", "error", "code"}], "skipped": n,
     "seconds": s}

A parse job returns the same record with ``parsed`` (files read), ``pages`` and ``next_jobs``
(the ingest jobs it handed the documents to); its ``errors`` are the files it could not read.

A failed job's result is an :class:`~poolq.wire.records.errors.ErrorRecord` instead. A client
reads the result back with :func:`~poolq.wire.records.outcome.job_result`."""

from __future__ import annotations

from dataclasses import dataclass, field

from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.record import WireRecord


@dataclass(frozen=True)
class DocumentErrorRecord(WireRecord):
    """One refused document: ``id`` (its id, ``#position`` without a usable one, None for a
    source line that is no document), the ``field`` at fault, the message, and its ``code``
    (``bad_request``: the document itself is wrong; another code: the worker could not encode
    or write it, so sending it again may work)."""

    wire_name = "document error"

    id: str | None
    field: str
    error: str
    code: ErrorCode


@dataclass(frozen=True)
class IngestResult(WireRecord):
    wire_name = "ingest result"

    points: int
    documents: int
    errors: list[DocumentErrorRecord] = field(default_factory=list)
    skipped: int = 0
    seconds: float = 0.0
    # a parse job's: files read, their pages, and the ingest jobs it handed the documents to
    parsed: int = 0
    pages: int = 0
    next_jobs: list[str] = field(default_factory=list)
    ocr_pages: int = 0  # of those pages, the ones read by OCR

    @property
    def all_refused(self) -> bool:
        """Documents were refused, and none written, skipped or parsed."""
        return bool(self.errors) and not (
            self.documents or self.skipped or self.points or self.parsed
        )

    @property
    def size(self) -> int:
        """Documents in the job: written, refused, or skipped (parsed, for a parse job)."""
        return max(self.documents, self.parsed) + len(self.errors) + self.skipped
