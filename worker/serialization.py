"""The msgpack job serializer used on both sides of the queue. Never pickle: anyone who can
write to Redis could otherwise run code in the worker. A payload that is not valid msgpack (a
pickle, say) fails to deserialize and the job is refused without any of it being executed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

DEFAULT_MAX_JOB_BYTES = 64 << 20  # a job's whole payload (documents included)


class PayloadTooLargeError(ValueError):
    pass


def _default(obj: Any) -> Any:
    # arq stores a failed job's exception as its result: keep type and message, as plain data.
    if isinstance(obj, BaseException):
        return {"__error__": type(obj).__name__, "message": str(obj)}
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    raise TypeError(f"cannot serialize {type(obj).__name__} with msgpack")


def serialize(obj: Any) -> bytes:
    return msgpack.packb(obj, default=_default, use_bin_type=True, datetime=False)


def deserialize(data: bytes) -> Any:
    # strict: a trailing byte (as in a pickle's framing) is an error, not ignored.
    return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)


def job_deserializer(max_bytes: int = DEFAULT_MAX_JOB_BYTES) -> Callable[[bytes], Any]:
    """The worker's deserializer: refuses a payload over ``max_bytes`` before decoding it
    (arq then fails the job with the error, and the worker carries on)."""

    def load(data: bytes) -> Any:
        if len(data) > max_bytes:
            raise PayloadTooLargeError(
                f"job payload is {len(data)} bytes, over the limit of {max_bytes} bytes; "
                "split the documents into smaller jobs"
            )
        return deserialize(data)

    return load


def error_info(result: Any) -> str | None:
    """The message of a failed job's result, if it is a serialized exception."""
    if isinstance(result, dict) and "__error__" in result:
        return f"{result['__error__']}: {result.get('message', '')}"
    return None
