"""Errors as the gRPC status codes a Qdrant server answers with: a missing collection is
NOT_FOUND, creating one that exists ALREADY_EXISTS, a request the endpoint cannot run (a bad
vector, an unknown vector name, a feature it does not serve) INVALID_ARGUMENT with the reason,
anything else INTERNAL (and logged)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from poolq.sinks.store.edge import CollectionNotFoundError
from poolq.sinks.store.errors import EdgeError

log = logging.getLogger(__name__)
S = TypeVar("S")
Req = TypeVar("Req")
Resp = TypeVar("Resp")


class RpcError(Exception):
    """An answer with this status code and message (raised by the servicers)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def invalid(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.INVALID_ARGUMENT, message)


def unsupported(what: str) -> RpcError:
    return invalid(f"{what} is not supported by this endpoint (poolq over Qdrant Edge)")


def refuse(request: Any, *fields: str) -> None:
    """Refuse a request that sets any of ``fields`` (a message field left empty is unset)."""
    for field in fields:
        if request.HasField(field):
            value = getattr(request, field)
            if not hasattr(value, "ByteSize") or value.ByteSize():
                raise unsupported(f"{type(request).__name__}.{field}")


def not_found(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.NOT_FOUND, message)


def already_exists(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.ALREADY_EXISTS, message)


def missing_collection(name: str) -> RpcError:
    return not_found(f"Not found: Collection `{name}` doesn't exist!")


def status_of(e: BaseException) -> tuple[grpc.StatusCode, str]:
    """The status code and message that answer a call which raised ``e``."""
    if isinstance(e, RpcError):
        return e.code, str(e)
    if isinstance(e, CollectionNotFoundError):
        return grpc.StatusCode.NOT_FOUND, f"Not found: {e}"
    if isinstance(e, EdgeError | ValueError | TypeError):  # pydantic's errors are ValueErrors
        return grpc.StatusCode.INVALID_ARGUMENT, f"Wrong input: {e}"
    log.exception("qdrant endpoint: internal error", exc_info=e)
    return grpc.StatusCode.INTERNAL, f"Service internal error: {type(e).__name__}: {e}"


def rpc(method: Callable[[S, Req], Resp]) -> Callable[[S, Req, grpc.ServicerContext], Resp]:
    """A servicer method, ``method(self, request) -> response``: its exceptions become the
    call's status (:func:`status_of`), and the response's ``time`` is the seconds it took."""

    @functools.wraps(method)
    def wrapper(self: S, request: Req, context: grpc.ServicerContext) -> Resp:
        started = time.perf_counter()
        try:
            response = method(self, request)
        except Exception as e:
            code, message = status_of(e)
            context.abort(code, message)
        if "time" in type(response).DESCRIPTOR.fields_by_name:  # type: ignore[attr-defined]
            response.time = time.perf_counter() - started  # type: ignore[attr-defined]
        return response

    return wrapper
