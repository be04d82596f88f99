"""Why a file could not be read: :class:`ParseError` with one of the parse stage's codes.

Each code is an :class:`~poolq.wire.records.codes.ErrorCode` so that the document's error in
the job result carries it as every other error does. The message is one line naming what is
wrong with the file; the caller prefixes the file's name.
"""

from __future__ import annotations

from poolq.wire.records.codes import ErrorCode

# the codes a file's parse can end with (ErrorCode members)
PARSE_CODES = (
    ErrorCode.ENCRYPTED,
    ErrorCode.CORRUPT,
    ErrorCode.NO_TEXT,
    ErrorCode.TOO_LARGE,
    ErrorCode.PARSE_TIMEOUT,
    ErrorCode.UNSUPPORTED,
)


class ParseError(ValueError):
    """A file that cannot be read as a document. ``code``: one of :data:`PARSE_CODES`."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        if code not in PARSE_CODES:
            raise AssertionError(f"not a parse code: {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
