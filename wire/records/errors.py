"""An error as it crosses Redis: its code (what the reader decides by), the exception's class
name and its message (for people). Used for job results that are exceptions, search reply
errors, dead letters and job outcomes. Every error carries its code: a map without one is no
error record (:class:`~poolq.wire.records.record.WireError` naming the field)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from poolq.wire.records.codes import ErrorCode, error_code
from poolq.wire.records.record import WireError, WireRecord
from poolq.wire.serialization import error_message


@dataclass(frozen=True)
class ErrorRecord(WireRecord):
    wire_name = "error"

    code: ErrorCode
    type: str
    message: str

    @classmethod
    def of(cls, e: BaseException) -> ErrorRecord:
        """``e`` as a record: its code (:func:`error_code`), class name, and a message that is
        never empty (:func:`error_message`)."""
        return cls(error_code(e), type(e).__name__, error_message(e))

    def text(self) -> str:
        """``Type: message``, as logs and ``poolq dlq list`` show it."""
        return f"{self.type}: {self.message or 'raised without a message'}"

    @classmethod
    def from_result(cls, data: Any) -> ErrorRecord | None:
        """The error a stored job result holds (None: not an error, a map without a ``code``);
        :class:`WireError` naming the field for a map with a code that is no error record."""
        if not isinstance(data, dict) or "code" not in data:
            return None
        return cls.from_wire(data)


def failure_of(result: Any) -> ErrorRecord:
    """The error of a job that failed, from its stored result: the record it holds, else an
    ``internal`` error saying what was there instead (a result that is no error record)."""
    try:
        record = ErrorRecord.from_result(result)
    except WireError as e:
        return ErrorRecord(ErrorCode.INTERNAL, "WireError", str(e))
    if record is None:
        return ErrorRecord(
            ErrorCode.INTERNAL,
            "WireError",
            f"a failed job's result that is no error record ({type(result).__name__})",
        )
    return record
