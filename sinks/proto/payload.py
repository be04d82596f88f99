"""A point's JSON payload as ``map<string, Value>`` wire bytes (``json_with_int.proto``).

``Value`` is a oneof: ``null_value = 1`` (enum, written as 0), ``double_value = 2`` (fixed64),
``integer_value = 3`` (int64 varint), ``string_value = 4``, ``bool_value = 5``,
``struct_value = 6`` (``Struct { map<string, Value> fields = 1 }``), ``list_value = 7``
(``ListValue { repeated Value values = 1 }``). A map entry is a message with the key as field 1
and the value as field 2. Types are mapped as qdrant-client maps them (``json_to_value``): exact
``str``/``int``/``float``/``bool`` first, then ``None``, lists and tuples, dicts with string
keys, subclasses of int/float/str, and anything else through pydantic's JSON conversion.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from poolq.sinks.proto.protobuf_format import delimited, int64, varint

_NULL = b"\x08\x00"
_TRUE, _FALSE = b"\x28\x01", b"\x28\x00"
_DOUBLE, _INT, _STR = b"\x11", b"\x18", b"\x22"
_STRUCT, _LIST = b"\x32", b"\x3a"
_ENTRY_VALUE, _REPEATED = b"\x12", b"\x0a"
_pack_double = struct.Struct("<d").pack
_SMALL = [bytes((n,)) for n in range(128)]  # one-byte varints
_KEYS: dict[str, bytes] = {}  # a map entry's key field, by name (names repeat on every point)
_MAX_KEYS = 4096
_MEMO_ITEMS = 8  # a dict this small is kept by content, a larger one by identity
_MEMO_STR = 256  # longer strings (a chunk's text) are not worth keeping for the next point


def _length(n: int) -> bytes:
    return _SMALL[n] if n < 128 else varint(n)


def map_entries(
    field_key: bytes, mapping: dict[str, Any], memo: dict[Any, bytes] | None = None
) -> bytes:
    """``mapping`` as the entries of a ``map<string, Value>`` field whose key is ``field_key``
    (a payload: 3 in ``PointStruct``; a ``Struct``: 1). An entry is a message: the key as
    field 1, the value as field 2.

    ``memo``: entries already encoded in this request, for the fields that points repeat (a
    document's id, hashes, metadata; the batch's model names and time): scalars by value, an
    object by identity, which holds while the caller keeps the points alive and unchanged
    (one request). Long strings (a chunk's text) are never kept."""
    parts = []
    keys = _KEYS
    for name, v in mapping.items():
        t = type(v)
        memo_key: Any = None
        if memo is not None:
            if t is dict and len(v) <= _MEMO_ITEMS:  # by content: a copy per point (models)
                memo_key = _content_key(name, v)
            elif t is dict or t is list:
                memo_key = (name, id(v))
            elif (t is str and len(v) <= _MEMO_STR) or t is int or v is None or t is bool:
                memo_key = (name, t, v)
            if memo_key is not None and (done := memo.get(memo_key)) is not None:
                parts.append(done)
                continue
        k = keys.get(name)
        if k is None:
            if type(name) is not str:
                raise TypeError(f"payload: expected string keys, got {name!r}")
            k = delimited(b"\x0a", name.encode("utf-8"))
            if len(keys) < _MAX_KEYS:
                keys[name] = k
        enc = _BY_TYPE.get(t)
        body = enc(v) if enc is not None else _other(v)
        entry = k + _ENTRY_VALUE + _length(len(body)) + body
        field = field_key + _length(len(entry)) + entry
        if memo is not None and memo_key is not None:
            memo[memo_key] = field
        parts.append(field)
    return b"".join(parts)


def _content_key(name: str, v: dict[str, Any]) -> Any:
    """A memo key for a small dict of scalars (its items), else by identity."""
    items = tuple(v.items())
    try:
        hash(items)
    except TypeError:  # a nested list or dict: by identity
        return (name, id(v))
    return (name, dict, items)


def value(v: Any) -> bytes:
    """One JSON value as a ``Value`` message body."""
    enc = _BY_TYPE.get(type(v))
    return enc(v) if enc is not None else _other(v)


def _str(v: str) -> bytes:
    b = v.encode("utf-8")
    return _STR + _length(len(b)) + b


def _int(v: int) -> bytes:
    return _INT + (_SMALL[v] if 0 <= v < 128 else int64(v))


def _float(v: float) -> bytes:
    return _DOUBLE + _pack_double(v)


def _bool(v: bool) -> bytes:
    return _TRUE if v else _FALSE


def _none(v: None) -> bytes:
    return _NULL


def _list(v: list[Any] | tuple[Any, ...]) -> bytes:
    parts = []
    for x in v:
        body = value(x)
        parts.append(_REPEATED + _length(len(body)) + body)
    return delimited(_LIST, b"".join(parts))


def _dict(v: dict[Any, Any]) -> bytes:
    if not all(type(k) is str for k in v):
        return _other(v)
    return delimited(_STRUCT, map_entries(_REPEATED, v))


_BY_TYPE: dict[type, Callable[[Any], bytes]] = {
    str: _str, int: _int, float: _float, bool: _bool, type(None): _none,
    list: _list, tuple: _list, dict: _dict,
}  # fmt: skip


def _other(v: Any) -> bytes:
    """Subclasses of the JSON types (an IntEnum: its value), and anything else as pydantic
    makes it JSON (as qdrant-client does: a UUID, a datetime, a set, a dict with other keys)."""
    if isinstance(v, list | tuple):
        return _list(v)
    if isinstance(v, dict) and all(type(k) is str for k in v):
        return delimited(_STRUCT, map_entries(_REPEATED, v))
    if isinstance(v, int):  # bool has no subclasses: an int subclass is an integer
        return _int(int(v))
    if isinstance(v, float):
        return _float(float(v))
    if isinstance(v, str):
        return _str(str(v))
    from pydantic_core import to_jsonable_python

    try:
        plain = to_jsonable_python(v)
    except (TypeError, ValueError) as e:
        raise ValueError(f"payload: not a JSON value: {v!r}") from e
    return value(plain)
