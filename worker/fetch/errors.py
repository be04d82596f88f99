"""What a fetch can fail with, each with the code a document error carries.

* :class:`ObjectGone`: a 404 (an object listed a moment ago and deleted since): not an error of
  the sync, the object is simply no longer there;
* :class:`FetchRefused`: the object store or web server answered, and retrying cannot help (403, 400, too
  large, too many redirects): the document's error, with its code;
* :class:`SourceUnavailable`: throttled, failing or unreachable past the retries (429, 5xx,
  timeouts, resets): the sync parks and resumes later.
"""

from __future__ import annotations

from poolq.wire.records.codes import ErrorCode


class FetchError(Exception):
    code = ErrorCode.BAD_REQUEST

    def __init__(self, uri: str, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(f"{uri}: {message}")
        self.uri = uri
        self.message = message
        if code is not None:
            self.code = code


class ObjectGone(FetchError):
    pass


class FetchRefused(FetchError):
    pass


class Transient(FetchError):
    """One try failed in a way a later try may not (retried by ``retry.py``)."""

    code = ErrorCode.TIMEOUT


class SourceUnavailable(FetchError):
    """Still failing after every retry: the object store or web server is down for now."""

    code = ErrorCode.TIMEOUT
