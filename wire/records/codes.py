"""Error codes carried in the records that cross Redis (job results that are exceptions, search
reply errors, dead letters, job outcomes). A client decides what an error means by its code,
never by the exception's class name: a class may be renamed or moved, its code stays.

:func:`error_code` is the one place the worker maps an exception to its code. An exception class
says its own code with a ``code`` class attribute (``JobStalledError.code``, say); otherwise the
code follows from the built-in class it derives from.
"""

from __future__ import annotations

import asyncio
import enum


class ErrorCode(enum.StrEnum):
    BAD_REQUEST = "bad_request"  # the request itself is wrong: retrying it cannot help
    TIMEOUT = "timeout"  # past a deadline (a job's ceiling, a wait)
    STALLED = "stalled"  # a job that made no progress for its stall limit
    PAYLOAD_REJECTED = "payload_rejected"  # a job payload refused before it was decoded
    SINK = "sink"  # the vector store (Qdrant) unavailable past the writer's retries
    CANCELLED = "cancelled"  # cancelled (a worker shutting down, a job aborted)
    INTERNAL = "internal"  # anything else: the worker's own failure
    # outside what the worker may read: a path not under its source_roots (or none set), a URI
    # not under its source_uris (or none set), a reindex source neither allows
    FORBIDDEN = "forbidden"
    # a file the parse stage could not read (worker/parse/errors.py)
    ENCRYPTED = "encrypted"  # a password-protected PDF
    CORRUPT = "corrupt"  # truncated or unreadable, a 0-byte DOCX, a parser that crashed
    NO_TEXT = "no_text"  # no text layer (a scanned PDF): needs OCR
    TOO_LARGE = "too_large"  # over the byte limit, or a zip that would inflate past its bound
    PARSE_TIMEOUT = "parse_timeout"  # the parser ran past the per-document time limit
    UNSUPPORTED = "unsupported"  # not a document type poolq reads (named explicitly)


def error_code(e: BaseException) -> ErrorCode:
    """The code of ``e``: its class's ``code`` attribute when it has one, else by kind
    (``ValueError``: bad_request, ``TimeoutError``: timeout, a cancellation: cancelled, anything
    else: internal)."""
    code = getattr(e, "code", None)
    if isinstance(code, ErrorCode):
        return code
    if isinstance(e, asyncio.CancelledError):
        return ErrorCode.CANCELLED
    if isinstance(e, ValueError):
        return ErrorCode.BAD_REQUEST
    if isinstance(e, TimeoutError):
        return ErrorCode.TIMEOUT
    return ErrorCode.INTERNAL
