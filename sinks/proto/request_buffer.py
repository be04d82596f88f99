"""A request's bytes written once, in place, from a plan of its parts.

A plan is the request in order: small fields as ``bytes``, a dense vector as its array's bytes
(a uint8 view, ``[4d]``), a multi-vector as :class:`Rows` (every row the same header, then the
row's bytes). :func:`write_plan` allocates the result at its final size and copies each part
into it once, a multi-vector as two strided copies (headers, rows) rather than through a
table of its own and a join.

gRPC's Python API takes a request as ``bytes`` only, and copies it into its own buffer. The
result is therefore a ``bytes`` object from the start: on CPython, the C API's
``PyBytes_FromStringAndSize(NULL, n)`` (what C extensions use to build bytes in place) gives a
new, unshared object whose buffer is written here before anything else can see it; elsewhere
the request is built in a ``bytearray`` and copied once into ``bytes``.
"""

from __future__ import annotations

import ctypes
import platform
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import numpy as np


class Rows(NamedTuple):
    """A ``MultiDenseVector`` body: ``header`` before each row of ``data`` [n, 4d] (uint8)."""

    header: bytes
    data: np.ndarray

    @property
    def nbytes(self) -> int:
        n, w = self.data.shape
        return n * (len(self.header) + w)


Plan = list[bytes | np.ndarray | Rows]


def _bytes_in_place() -> Callable[[None, int], bytes] | None:
    if platform.python_implementation() != "CPython":
        return None
    new = ctypes.pythonapi.PyBytes_FromStringAndSize
    new.restype = ctypes.py_object
    new.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t)
    return cast(Callable[[None, int], bytes], new)


_NEW_BYTES = _bytes_in_place()


def _buffer(size: int) -> tuple[bytes | bytearray, np.ndarray]:
    """A result of ``size`` bytes (not yet written) and a writable uint8 view of it."""
    if _NEW_BYTES is None or size <= 1:  # (b"" and one-byte bytes are shared singletons)
        portable = bytearray(size)
        return portable, np.frombuffer(portable, dtype=np.uint8)
    out = _NEW_BYTES(None, size)
    address = ctypes.cast(cast(Any, out), ctypes.c_void_p).value  # its buffer (bytes -> char *)
    if address is None:
        raise MemoryError(f"request: no buffer for {size} bytes")
    view: Any = (ctypes.c_ubyte * size).from_address(address)
    return out, np.frombuffer(view, dtype=np.uint8)


def write_plan(plan: Plan, size: int) -> bytes:
    """The bytes of ``plan`` (``size``: their total, which the plan must add up to)."""
    out, arr = _buffer(size)
    mv = memoryview(cast(Any, arr))
    pos = 0
    for part in plan:
        if type(part) is bytes:
            end = pos + len(part)
            mv[pos:end] = part
        elif type(part) is Rows:
            head, data = part
            n, w = data.shape
            h = len(head)
            end = pos + n * (h + w)
            table = arr[pos:end].reshape(n, h + w)  # [n, header + 4d]
            table[:, :h] = np.frombuffer(head, dtype=np.uint8)
            table[:, h:] = data
        else:  # a dense vector's bytes
            end = pos + cast(np.ndarray, part).nbytes
            arr[pos:end] = part
        pos = end
    if pos != size:
        raise AssertionError(f"request: planned {size} bytes, wrote {pos}")
    return out if type(out) is bytes else bytes(out)
