"""The msgpack job serializer used on both sides of the queue. Never pickle: anyone who can
write to Redis could otherwise run code in the worker. A payload that is not valid msgpack (a
pickle, say) fails to deserialize and the job is refused without any of it being executed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

from poolq.wire.records.codes import ErrorCode

DEFAULT_MAX_JOB_BYTES = 64 << 20  # a job's whole payload (documents included)


def _default(obj: Any) -> Any:
    # arq stores a failed job's exception as its result: as an ErrorRecord (code, type,
    # message), plain data.
    if isinstance(obj, BaseException):
        from poolq.wire.records.errors import ErrorRecord

        return ErrorRecord.of(obj).to_wire()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    raise TypeError(f"cannot serialize {type(obj).__name__} with msgpack")


def serialize(obj: Any) -> bytes:
    return msgpack.packb(obj, default=_default, use_bin_type=True, datetime=False)


def deserialize(data: bytes) -> Any:
    # strict: a trailing byte (as in a pickle's framing) is an error, not ignored.
    return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)


def redis_text(member: bytes | str) -> str:
    """A key or member as Redis returned it (bytes without ``decode_responses``), as text."""
    return member.decode() if isinstance(member, bytes) else str(member)


REJECTED_JOB = "poolq_rejected_payload"
_JOB_KEYS = ("f", "a", "k", "t", "et")


def job_deserializer(max_bytes: int = DEFAULT_MAX_JOB_BYTES) -> Callable[[bytes], Any]:
    """The worker's deserializer. A payload over ``max_bytes`` is refused before it is decoded,
    and one that is not a msgpack arq job (a pickle, garbage) is refused undecoded: either way
    the job is routed to :data:`REJECTED_JOB`, which fails it with a message saying why (arq
    would only say "unable to deserialize job"), and the worker carries on."""

    def rejected(message: str) -> dict[str, Any]:
        return {"f": REJECTED_JOB, "a": [message], "k": {}, "t": 1, "et": 0}

    def load(data: bytes) -> Any:
        if len(data) > max_bytes:
            return rejected(
                f"job payload is {len(data)} bytes, over the limit of {max_bytes} bytes; "
                "split the documents into smaller jobs"
            )
        try:
            job = deserialize(data)
        except Exception as e:
            return rejected(
                f"job payload is not msgpack ({type(e).__name__}); poolq never accepts pickle"
            )
        if not isinstance(job, dict) or any(k not in job for k in _JOB_KEYS):
            return rejected("job payload is msgpack but not an arq job")
        return job

    return load


async def rejected_payload(ctx: dict[str, Any], message: str) -> None:
    raise PayloadRejectedError(message)


class PayloadRejectedError(ValueError):
    code = ErrorCode.PAYLOAD_REJECTED


def error_message(e: BaseException) -> str:
    """``str(e)``, never empty: an exception raised without a message (``TimeoutError()``,
    ``CancelledError()``) says what it is instead."""
    text = str(e).strip()
    if text:
        return text
    if isinstance(e, TimeoutError):
        return "timed out (the exception carried no message)"
    return f"{type(e).__name__} raised without a message"
