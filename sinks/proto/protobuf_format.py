"""Protobuf's wire format, the parts Qdrant's write path needs.

A field is a key (``field_number << 3 | wire_type``, a varint) and its value: a varint (wire
type 0), 8 little-endian bytes (1), or a varint length and that many bytes (2: strings,
messages, packed repeated scalars). A packed ``repeated float`` is its float32 values' raw
little-endian bytes, so an array's buffer is the field's body as it is; ``repeated uint32`` is
one varint per value (:func:`varints`, computed for the whole array at once).
"""

from __future__ import annotations

import numpy as np

_MASK64 = (1 << 64) - 1
_LE_F32 = np.dtype("<f4")


# the one- and two-byte varints (keys, string and row lengths) looked up, not built
_TABLE = [bytes((n,)) for n in range(0x80)] + [
    bytes((n & 0x7F | 0x80, n >> 7)) for n in range(0x80, 0x4000)
]


def varint(n: int) -> bytes:
    """``n`` (0 <= n < 2**64) as a base-128 varint, low group first."""
    if 0 <= n < 0x4000:
        return _TABLE[n]
    if 0x4000 <= n < 0x200000:  # a vector's or a point's length
        return bytes((n & 0x7F | 0x80, (n >> 7) & 0x7F | 0x80, n >> 14))
    if n < 0:
        raise ValueError(f"varint: expected an integer >= 0, got {n}")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def int64(n: int) -> bytes:
    """An ``int64`` field's varint: negatives as their 64-bit two's complement (10 bytes)."""
    if not -(1 << 63) <= n < (1 << 63):
        raise ValueError(f"expected an integer that fits in 64 bits, got {n}")
    return varint(n & _MASK64)


def delimited(field_key: bytes, body: bytes) -> bytes:
    """A length-delimited field: its key, the body's length, the body."""
    return field_key + varint(len(body)) + body


def float32_le(values: object) -> np.ndarray:
    """Values as a C-contiguous little-endian float32 array (no copy when they are one)."""
    return np.ascontiguousarray(values, dtype=_LE_F32)


_SHIFTS = np.arange(0, 35, 7, dtype=np.uint64)  # a uint32 takes at most 5 varint bytes


def varints(values: np.ndarray) -> bytes:
    """The packed body of a ``repeated uint32``: each value's varint, in order.

    ``values``: integers in [0, 2**32); shape [n]. Built as an [n, 5] table of 7-bit groups,
    the continuation bit set on every group but each value's last, then the used groups."""
    a = np.asarray(values)
    if a.size and (a.min() < 0 or a.max() > 0xFFFFFFFF):
        raise ValueError("expected uint32 values in [0, 2**32)")
    a = a.astype(np.uint64, copy=False)
    groups = ((a[:, None] >> _SHIFTS) & np.uint64(0x7F)).astype(np.uint8)  # [n, 5]
    used = 1 + (a >= 1 << 7) + (a >= 1 << 14) + (a >= 1 << 21) + (a >= 1 << 28)  # [n]
    position = np.arange(5)
    groups[position < (used[:, None] - 1)] |= 0x80
    return groups[position < used[:, None]].tobytes()
