"""A dead letter: a job that failed for good, kept in the ``DEAD_LETTER_KEY`` hash (job id ->
this record, msgpack) with what it takes to run it again (``poolq dlq list|retry|drop``).
``error`` is the ``Type: message`` text people read; ``code`` what a program decides by
(required: a letter without one does not decode)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.record import WireRecord


@dataclass(frozen=True)
class DeadLetter(WireRecord):
    wire_name = "dead letter"

    job_id: str
    function: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    error: str = "raised without a message"
    tries: int = 1
    failed_at: float = 0.0
    code: ErrorCode = field(kw_only=True)  # (required, after the fields with defaults)
