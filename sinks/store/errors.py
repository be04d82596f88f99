"""What a failed store call means: transient (waiting may fix it: connection problems, timeouts,
5xx and 429 from a server) or permanent (everything else, including every Qdrant Edge error: an
in-process engine has no network to wait for), and the errors the stores raise themselves."""

from __future__ import annotations

import grpc
import httpx
from pydantic import ValidationError
from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from poolq.wire.records.codes import ErrorCode

_GRPC_TRANSIENT = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ABORTED,
}


class SinkUnavailableError(RuntimeError):
    """Qdrant kept failing with transient errors until the retries ran out."""

    code = ErrorCode.SINK

    def __init__(self, what: str, attempts: int, last: BaseException) -> None:
        self.attempts = attempts
        super().__init__(
            f"Qdrant unavailable: {what} failed {attempts} times "
            f"(1 attempt + {attempts - 1} retries); last error: {describe_error(last)}"
        )


class StoreLockedError(RuntimeError):
    """An embedded store's folder is held by another process (a running worker)."""


class NotAStoreError(ValueError):
    """A folder that is not an embedded store poolq can open (for example a qdrant-client
    local-mode folder, which only ``poolq export`` reads)."""


class EdgeError(RuntimeError):
    """Qdrant Edge refused an operation (bad vector, unknown vector name, ...): permanent."""


def describe_error(e: BaseException) -> str:
    """``Type: message`` of an error, unwrapping qdrant-client's ResponseHandlingException."""
    if isinstance(e, ResponseHandlingException):
        src = e.source
        return f"ResponseHandlingException({type(src).__name__}: {src})"
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def is_transient(e: BaseException) -> bool:
    """Whether retrying may help: Qdrant unavailable past the writer's retries, connection
    problems, timeouts, 5xx and 429 responses (the encode worker's jobs retry on these)."""
    if isinstance(e, SinkUnavailableError):
        return True
    if isinstance(e, ResponseHandlingException):
        # it wraps transport errors, and also responses this client can't parse (permanent)
        return not isinstance(e.source, ValidationError)
    if isinstance(e, UnexpectedResponse):
        return e.status_code is None or e.status_code == 429 or e.status_code >= 500
    if isinstance(e, ResourceExhaustedResponse | ConnectionError | TimeoutError):
        return True
    if isinstance(e, httpx.TransportError):
        return True
    if isinstance(e, grpc.RpcError):
        code = getattr(e, "code", None)
        return callable(code) and code() in _GRPC_TRANSIENT
    return False


def retry_after_s(e: BaseException) -> float:
    """The wait a server asked for (a 429's Retry-After), else 0."""
    if isinstance(e, ResourceExhaustedResponse):
        return float(e.retry_after_s)
    return 0.0
