"""An error as it crosses Redis: its code (what the reader decides by), the exception's class
name and its message (for people). Used for job results that are exceptions, search reply
errors, dead letters and job outcomes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from poolq.wire.records.base import WireError, WireRecord
from poolq.wire.records.codes import ErrorCode, error_code, legacy_code
from poolq.wire.serialization import error_message

# the key arq's stored exceptions had before codes: still written, so older clients read them
LEGACY_TYPE_KEY = "__error__"


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

    def as_result(self) -> dict[str, Any]:
        """A failed job's result as arq stores it: the record, plus the class name under
        ``"__error__"`` (what clients older than codes look for)."""
        return self.to_wire() | {LEGACY_TYPE_KEY: self.type}

    @classmethod
    def from_result(cls, data: Any) -> ErrorRecord | None:
        """The error a stored result or reply holds (None: not an error). Reads a record with a
        code, and the ``{"__error__": type, "message": ...}`` (or ``{"type", "message"}``) maps
        of workers older than codes, whose code is inferred from the class name
        (:func:`~poolq.wire.records.codes.legacy_code`)."""
        if not isinstance(data, dict):
            return None
        if "code" in data:
            try:
                return cls.from_wire(data)
            except WireError:
                pass  # an unknown code (a newer worker): read as an older record
        type_name = data.get(LEGACY_TYPE_KEY, data.get("type"))
        if not isinstance(type_name, str):
            return None
        message = data.get("message")
        return cls(
            legacy_code(type_name),
            type_name,
            message if isinstance(message, str) and message else "raised without a message",
        )
