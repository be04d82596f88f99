"""``UpsertPoints`` request bytes built from the sink's point records (``sinks/points.py``).

Message layout (``points.proto``; field numbers in brackets):

    UpsertPoints  collection_name [1] string, wait [2] bool, points [3] PointStruct ...
    PointStruct   id [1] PointId, payload [3] map<string, Value>, vectors [4] Vectors
    PointId       num [1] uint64 | uuid [2] string
    Vectors       vectors [2] NamedVectors { map<string, Vector> vectors [1] }
    Vector        dense [101] DenseVector | sparse [102] SparseVector | multi_dense [103]
    DenseVector   data [1] packed float32
    SparseVector  values [1] packed float32, indices [2] packed uint32
    MultiDenseVector  vectors [1] DenseVector, one per row

The request is planned first (the small fields as bytes, the vectors as their arrays, every
length known), then written once into a buffer of its final size (``request_buffer.py``): a
dense vector's float32 buffer is its body as it is; a multi-vector's rows all have the same
length, so every row carries the same few header bytes, written beside the rows as one
strided copy of the array. Each vector's bytes are copied once here, once more by gRPC.
What qdrant-client builds for the same point (``RestToGrpc.convert_vector_struct``,
``json_to_value``) parses to an equal message: ``tests/sinks/test_proto_upsert.py`` checks
it, floats bit for bit.

Vectors stored as uint8 get the sink's code map (``store/uint8_codec.py``) first, as
qdrant-client's path does in ``ClientStore.upsert``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import numpy as np

from poolq.sinks.points import PointRecord, SparseValues
from poolq.sinks.proto.payload import map_entries
from poolq.sinks.proto.protobuf_format import delimited, float32_le, varint, varints
from poolq.sinks.proto.request_buffer import Plan, Rows, write_plan
from poolq.sinks.store import uint8_codec

_COLLECTION, _WAIT_TRUE, _POINT = b"\x0a", b"\x10\x01", b"\x1a"
_ID, _PAYLOAD, _VECTORS = b"\x0a", b"\x1a", b"\x22"
_ID_NUM, _ID_UUID = b"\x08", b"\x12"
_NAMED, _NAMED_ENTRY, _ENTRY_KEY, _ENTRY_VALUE = b"\x12", b"\x0a", b"\x0a", b"\x12"
_DENSE, _SPARSE, _MULTI = b"\xaa\x06", b"\xb2\x06", b"\xba\x06"  # fields 101, 102, 103
_DATA, _VALUES, _INDICES, _ROW = b"\x0a", b"\x0a", b"\x12", b"\x0a"
_NAME_KEYS: dict[str, bytes] = {}  # a vector name's map-entry key field (names repeat)
_MAX_NAMES = 256


def upsert_request(
    collection: str, points: Iterable[PointRecord], uint8_names: Collection[str] = ()
) -> bytes:
    """The serialized ``UpsertPoints`` of ``points`` into ``collection``, with ``wait`` true
    (the server answers once the points are applied). ``uint8_names``: the collection's
    vectors stored as uint8."""
    plan: Plan = [delimited(_COLLECTION, collection.encode("utf-8")), _WAIT_TRUE]
    size = sum(map(len, plan))
    memo: dict[Any, bytes] = {}  # payload entries the points repeat (see map_entries)
    for p in points:
        size += point_struct(plan, p, uint8_names, memo)
    return write_plan(plan, size)


def point_struct(
    plan: Plan, p: PointRecord, uint8_names: Collection[str], memo: dict[Any, bytes]
) -> int:
    """Append one ``PointStruct`` field (key, length, body) to ``plan``; its size in bytes
    (``memo``: see :func:`~poolq.sinks.proto.payload.map_entries`)."""
    named: Plan = []
    size = 0
    for name, v in p.vectors.items():
        key = _NAME_KEYS.get(name)
        if key is None:
            key = delimited(_ENTRY_KEY, name.encode("utf-8"))
            if len(_NAME_KEYS) < _MAX_NAMES:
                _NAME_KEYS[name] = key
        at = len(named)
        named.append(b"")  # the entry's heads, once the vector's length is known
        n = vector(named, v, uint8=name in uint8_names, name=name)
        head = key + _ENTRY_VALUE + varint(n)
        entry = len(head) + n
        prefix = _NAMED_ENTRY + varint(entry)
        named[at] = prefix + head
        size += len(prefix) + entry
    named_head = _NAMED + varint(size)
    vectors_head = _VECTORS + varint(len(named_head) + size)
    head = delimited(_ID, encode_point_id(p.id)) + map_entries(_PAYLOAD, p.payload, memo)
    body = len(head) + len(vectors_head) + len(named_head) + size
    point_head = _POINT + varint(body)
    plan.append(point_head + head + vectors_head + named_head)
    plan += named
    return len(point_head) + body


def encode_point_id(pid: Any) -> bytes:
    if type(pid) is int:  # a bool is no id (qdrant-client refuses one too)
        return _ID_NUM + varint(pid)
    if isinstance(pid, str):
        return delimited(_ID_UUID, pid.encode("utf-8"))
    raise TypeError(f"point id: expected a UUID string or an integer >= 0, got {pid!r}")


def vector(plan: Plan, value: Any, *, uint8: bool = False, name: str = "") -> int:
    """Append one ``Vector`` body (sparse, dense ``[d]`` or multi-vector ``[n, d]``) to
    ``plan``; its size in bytes."""
    if isinstance(value, SparseValues):
        values = delimited(_VALUES, float32_le(value.values).tobytes())
        body = values + delimited(_INDICES, varints(np.asarray(value.indices)))
        head = _SPARSE + varint(len(body))
        plan.append(head + body)
        return len(head) + len(body)
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    if value.dtype == np.uint8 or uint8:
        value = uint8_codec.for_storage(value, uint8)
    if value.ndim == 1:
        data = float32_le(value).view(np.uint8)
        inner = _DATA + varint(data.nbytes)
        n = len(inner) + data.nbytes
        outer = _DENSE + varint(n)
        plan += [outer + inner, data]
        return len(outer) + n
    if value.ndim == 2 and value.shape[0] > 0:
        table = rows(float32_le(value))
        head = _MULTI + varint(table.nbytes)
        plan += [head, table]
        return len(head) + table.nbytes
    raise ValueError(
        f"vector {name!r}: expected [dim] or [rows, dim] with rows >= 1, got shape {value.shape}"
    )


def rows(a: np.ndarray) -> Rows:
    """``MultiDenseVector`` body of float32 rows ``a`` [n, d]: n ``DenseVector`` fields, each
    the same header (its key, its length, its data field's key and length) and a row's bytes."""
    n, d = a.shape
    dense = _DATA + varint(4 * d)  # each row's DenseVector: its data field's key and length
    return Rows(_ROW + varint(len(dense) + 4 * d) + dense, a.view(np.uint8).reshape(n, 4 * d))
