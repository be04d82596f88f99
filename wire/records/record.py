"""The base of every record that crosses Redis: a frozen dataclass whose type hints are its
wire schema.

``to_wire()`` gives the plain map msgpack stores (nested records as maps, enums as their
values; an optional field whose default is ``None`` is left out while it is ``None``, unless
it is declared with :func:`always_on_wire`, for a ``null`` that readers look for);
``from_wire(data)`` checks and converts a map back, field by field, driven by the type hints
(``int``, ``float``, ``str``, ``bool``, ``Any``, enums, ``X | None``, nested records,
``list[...]``, ``dict[str, ...]``). ``pack()``/``unpack(raw)`` add msgpack
(:mod:`poolq.wire.serialization`: never pickle).

A field of the wrong type, or a required one missing, raises :class:`WireError` naming the
record and the field, expected vs got. Keys the record does not declare are ignored by default
(a newer writer talking to an older reader) and refused with ``strict=True`` (what the tests
use: a field written on one side only fails them). The pattern is arq's ``JobDef``/``JobResult``
(``arq/jobs.py``): one definition of what is stored, read and written through it on both sides.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any, ClassVar, Self

from poolq.wire.records.codes import ErrorCode
from poolq.wire.serialization import deserialize, serialize


class WireError(ValueError):
    """A record that does not match its definition (names the record and the field)."""

    code = ErrorCode.BAD_REQUEST


_KINDS: dict[type, str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    list: "a list",
    dict: "a map",
}


def _describe(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "null"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(repr(m.value) for m in tp)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if isinstance(tp, type) and issubclass(tp, WireRecord):
        return f"a map ({tp.wire_name})"
    return _KINDS.get(origin or tp, getattr(tp, "__name__", str(tp)))


def _shown(value: Any) -> str:
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str) and len(value) <= 40:
        return repr(value)
    return type(value).__name__


def _convert(value: Any, tp: Any, where: str, strict: bool) -> Any:
    def bad() -> WireError:
        return WireError(f"{where}: expected {_describe(tp)}, got {_shown(value)}")

    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return _convert(value, arg, where, strict)
            except WireError:
                if len(args) <= 2:
                    raise
        raise bad()
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            raise bad()
        return value
    if isinstance(tp, type) and issubclass(tp, WireRecord):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise bad()
        return tp._decode(value, strict=strict, where=where)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise bad() from None
    if tp is bool or tp is str:
        if not isinstance(value, tp):
            raise bad()
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad()
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad()
        return float(value)
    if origin is list:
        if not isinstance(value, list | tuple):
            raise bad()
        (item,) = typing.get_args(tp) or (Any,)
        return [_convert(v, item, f"{where}[{i}]", strict) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise bad()
        _, item = typing.get_args(tp) or (str, Any)
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise WireError(f"{where}: expected string keys, got {_shown(k)}")
            out[k] = _convert(v, item, f"{where}.{k}", strict)
        return out
    raise TypeError(f"{where}: no wire conversion for {tp!r}")  # a bug in a record's hints


def _plain(value: Any) -> Any:
    if isinstance(value, WireRecord):
        return value.to_wire()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


_SCHEMAS: dict[type, tuple[tuple[dataclasses.Field[Any], Any], ...]] = {}


def _schema(cls: type) -> tuple[tuple[dataclasses.Field[Any], Any], ...]:
    """Each field of the record class and its resolved type hint (computed once per class)."""
    if cls not in _SCHEMAS:
        hints = typing.get_type_hints(cls)
        _SCHEMAS[cls] = tuple((f, hints[f.name]) for f in dataclasses.fields(cls))
    return _SCHEMAS[cls]


# field metadata key: emit the field even while it is None (see always_on_wire)
_ALWAYS = "poolq.wire.always"


def always_on_wire(default: Any = None) -> Any:
    """A field that ``to_wire()`` always writes, ``null`` included: for a key readers already
    see as ``null`` (the rule for everyone else: an unset optional field is left out)."""
    return dataclasses.field(default=default, metadata={_ALWAYS: True})


def _left_out(f: dataclasses.Field[Any], value: Any) -> bool:
    return value is None and f.default is None and not f.metadata.get(_ALWAYS, False)


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


class WireRecord:
    """Mixin for a frozen dataclass that crosses Redis (see the module docstring)."""

    wire_name: ClassVar[str] = "record"

    def to_wire(self) -> dict[str, Any]:
        values = ((f, getattr(self, f.name)) for f, _ in _schema(type(self)))
        return {f.name: _plain(v) for f, v in values if not _left_out(f, v)}

    @classmethod
    def field_names(cls) -> frozenset[str]:
        return frozenset(f.name for f, _ in _schema(cls))

    @classmethod
    def from_wire(cls, data: Any, *, strict: bool = False) -> Self:
        """The record ``data`` holds; :class:`WireError` naming the field when it does not
        match. Unknown keys: ignored, or refused with ``strict``."""
        if not isinstance(data, dict):
            raise WireError(f"{cls.wire_name}: expected a map, got {_shown(data)}")
        return cls._decode(data, strict=strict, where=cls.wire_name)

    @classmethod
    def _decode(cls, data: dict[Any, Any], *, strict: bool, where: str) -> Self:
        schema = _schema(cls)
        if strict:
            unknown = sorted(str(k) for k in data if k not in cls.field_names())
            if unknown:
                raise WireError(
                    f"{where}: unknown field(s) {', '.join(unknown)} "
                    f"(expected only {', '.join(f.name for f, _ in schema)})"
                )
        values: dict[str, Any] = {}
        for f, tp in schema:
            if f.name not in data:
                if _required(f):
                    raise WireError(f"{where}: {f.name}: missing (a required field)")
                continue
            values[f.name] = _convert(data[f.name], tp, f"{where}: {f.name}", strict)
        return cls(**values)

    def pack(self) -> bytes:
        return serialize(self.to_wire())

    @classmethod
    def unpack(cls, raw: bytes, *, strict: bool = False) -> Self:
        try:
            data = deserialize(raw)
        except Exception as e:  # not msgpack (a pickle, garbage): never decoded further
            raise WireError(f"{cls.wire_name}: not msgpack ({type(e).__name__})") from None
        return cls.from_wire(data, strict=strict)
