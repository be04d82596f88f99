"""What crosses the pipes between a worker and its store process (``process.py``): msgpack,
never pickle, so that nothing on a pipe can run code in the other process.

The values a store call takes or returns, and how each travels:

* numpy arrays: their dtype, shape and raw bytes (one copy, no Python object per value);
* qdrant-client models (filters, points, records, scored points, ...): the class name, looked
  up in ``qdrant_client.models`` only, and the model's fields; a ``SparseVector`` travels as
  two arrays, built again without validation (as the worker built it);
* the writer's sparse vectors (``SparseValues``): their two arrays, arriving as arrays;
* poolq's schema dataclasses (:data:`DATACLASSES`): their fields;
* exceptions: the class (a builtin one, or one defined in ``poolq.sinks``/``qdrant_client``,
  already imported) and its arguments, rebuilt without running its ``__init__``; any other
  class arrives as an :class:`EdgeError` with the type's name and the message;
* tuples arrive as lists; dict keys and everything else as msgpack has them.

A value of any other type is refused when it is sent (``TypeError`` naming it), never guessed.
"""

from __future__ import annotations

import builtins
import dataclasses
import sys
import uuid
from typing import Any

import msgpack
import numpy as np
from pydantic import BaseModel
from qdrant_client import models

from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.points import SparseValues
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.store.errors import EdgeError

_ARRAY, _MODEL, _SPARSE, _DATACLASS, _ERROR, _SPARSE_VALUES = 1, 2, 3, 4, 5, 6
DATACLASSES: dict[str, type] = {
    c.__name__: c for c in (CollectionSchema, VectorSpec, CollectionSettings)
}
_ERROR_MODULES = ("poolq.sinks.", "qdrant_client.")


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, default=_default, use_bin_type=True, datetime=False)


def unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, raw=False, strict_map_key=False, ext_hook=_ext)


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        a = np.ascontiguousarray(obj)
        return msgpack.ExtType(_ARRAY, pack([a.dtype.str, list(a.shape), a.data]))
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, SparseValues):  # the writer's: its two arrays as they are
        return msgpack.ExtType(_SPARSE_VALUES, pack([obj.indices, obj.values]))
    if isinstance(obj, models.SparseVector):
        idx = np.asarray(obj.indices, dtype=np.int64)
        val = np.asarray(obj.values, dtype=np.float64)
        return msgpack.ExtType(_SPARSE, pack([idx, val]))
    if isinstance(obj, BaseModel) and getattr(models, type(obj).__name__, None) is type(obj):
        fields = {k: getattr(obj, k) for k in obj.model_fields_set or type(obj).model_fields}
        return msgpack.ExtType(_MODEL, pack([type(obj).__name__, fields]))
    if dataclasses.is_dataclass(obj) and DATACLASSES.get(type(obj).__name__) is type(obj):
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
        return msgpack.ExtType(_DATACLASS, pack([type(obj).__name__, fields]))
    if isinstance(obj, BaseException):
        return msgpack.ExtType(_ERROR, pack(_error_parts(obj)))
    if isinstance(obj, set | frozenset):
        return list(obj)
    if isinstance(obj, uuid.UUID):
        return str(obj)
    raise TypeError(f"the store process cannot send a {type(obj).__module__}.{type(obj).__name__}")


def _error_parts(e: BaseException) -> list[Any]:
    args = [a if isinstance(a, str | int | float | bool | None) else str(a) for a in e.args]
    return [type(e).__module__, type(e).__qualname__, args, str(e)]


def _ext(code: int, data: bytes) -> Any:
    if code == _ARRAY:
        dtype, shape, raw = unpack(data)
        return np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape)
    if code == _SPARSE_VALUES:
        return SparseValues(*unpack(data))
    if code == _SPARSE:
        idx, val = unpack(data)
        return models.SparseVector.model_construct(indices=idx.tolist(), values=val.tolist())
    if code == _MODEL:
        name, fields = unpack(data)
        cls = getattr(models, name, None)
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            raise TypeError(f"the store process sent an unknown model {name!r}")
        return cls.model_validate(fields)
    if code == _DATACLASS:
        name, fields = unpack(data)
        dc = DATACLASSES.get(name)
        if dc is None:
            raise TypeError(f"the store process sent an unknown record {name!r}")
        for f in dataclasses.fields(dc):  # msgpack has no tuples
            if str(f.type).startswith("tuple") and isinstance(fields.get(f.name), list):
                fields[f.name] = tuple(fields[f.name])
        return dc(**fields)
    if code == _ERROR:
        return _error(*unpack(data))
    raise TypeError(f"the store process sent an unknown extension type {code}")


def _error(module: str, qualname: str, args: list[Any], text: str) -> BaseException:
    cls = _error_class(module, qualname)
    if cls is None:
        return EdgeError(f"{qualname.rsplit('.', 1)[-1]}: {text}")
    e = cls.__new__(cls)  # its __init__ may take other arguments: set what str() shows
    BaseException.__init__(e, *args)
    return e


def _error_class(module: str, qualname: str) -> type[BaseException] | None:
    if module == "builtins":
        cls = getattr(builtins, qualname, None)
    elif module.startswith(_ERROR_MODULES) and module in sys.modules:  # never imported here
        cls = getattr(sys.modules[module], qualname, None)
    else:
        return None
    if isinstance(cls, type) and issubclass(cls, Exception):
        return cls
    return None
