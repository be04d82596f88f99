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

A dense vector's body is its float32 buffer; a multi-vector's rows all have the same length,
so every row carries the same few header bytes: the rows are written as one [n, header + 4d]
byte table (header broadcast, the array's bytes beside it) in one copy. What qdrant-client
builds for the same point (``RestToGrpc.convert_vector_struct``, ``json_to_value``) parses to
an equal message: ``tests/sinks/test_proto_upsert.py`` checks it, floats bit for bit.

Vectors stored as uint8 get the sink's code map (``store/uint8_codec.py``) first, as
qdrant-client's path does in ``ClientStore.upsert``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import numpy as np

from poolq.sinks.points import PointRecord, SparseValues
from poolq.sinks.proto.payload import map_entries
from poolq.sinks.proto.wire import delimited, float32_le, varint, varints
from poolq.sinks.store import uint8_codec

_COLLECTION, _WAIT_TRUE, _POINT = b"\x0a", b"\x10\x01", b"\x1a"
_ID, _PAYLOAD, _VECTORS = b"\x0a", b"\x1a", b"\x22"
_ID_NUM, _ID_UUID = b"\x08", b"\x12"
_NAMED, _NAMED_ENTRY, _ENTRY_KEY, _ENTRY_VALUE = b"\x12", b"\x0a", b"\x0a", b"\x12"
_DENSE, _SPARSE, _MULTI = b"\xaa\x06", b"\xb2\x06", b"\xba\x06"  # fields 101, 102, 103
_DATA, _VALUES, _INDICES, _ROW = b"\x0a", b"\x0a", b"\x12", b"\x0a"


Pieces = list[bytes | memoryview]  # a message body as buffers, in order, joined once at the end


def upsert_request(
    collection: str, points: Iterable[PointRecord], uint8_names: Collection[str] = ()
) -> bytes:
    """The serialized ``UpsertPoints`` of ``points`` into ``collection``, with ``wait`` true
    (the server answers once the points are applied). ``uint8_names``: the collection's
    vectors stored as uint8. Every part is built as a list of buffers with its length, so
    the vectors' bytes are copied twice (into a row table, into the request), not once per
    level of nesting."""
    pieces: Pieces = [delimited(_COLLECTION, collection.encode("utf-8")), _WAIT_TRUE]
    memo: dict[Any, bytes] = {}  # payload entries the points repeat (see map_entries)
    for p in points:
        body, n = point_struct(p, uint8_names, memo)
        pieces.append(_POINT + varint(n))
        pieces += body
    return b"".join(pieces)


def point_struct(
    p: PointRecord, uint8_names: Collection[str] = (), memo: dict[Any, bytes] | None = None
) -> tuple[Pieces, int]:
    """One ``PointStruct`` body, as buffers, and its length (``memo``: see
    :func:`~poolq.sinks.proto.payload.map_entries`)."""
    named: Pieces = []
    size = 0
    for name, v in p.vectors.items():
        vec, n = vector(v, uint8=name in uint8_names, name=name)
        head = delimited(_ENTRY_KEY, name.encode("utf-8")) + _ENTRY_VALUE + varint(n)
        entry = len(head) + n
        prefix = _NAMED_ENTRY + varint(entry)
        named += [prefix, head, *vec]
        size += len(prefix) + entry
    named_head = _NAMED + varint(size)
    vectors_head = _VECTORS + varint(len(named_head) + size)
    head = delimited(_ID, point_id(p.id)) + map_entries(_PAYLOAD, p.payload, memo)
    return [head, vectors_head, named_head, *named], (
        len(head) + len(vectors_head) + len(named_head) + size
    )


def point_id(pid: Any) -> bytes:
    if type(pid) is int:  # a bool is no id (qdrant-client refuses one too)
        return _ID_NUM + varint(pid)
    if isinstance(pid, str):
        return delimited(_ID_UUID, pid.encode("utf-8"))
    raise TypeError(f"point id: expected a UUID string or an integer >= 0, got {pid!r}")


def vector(value: Any, *, uint8: bool = False, name: str = "") -> tuple[Pieces, int]:
    """One ``Vector`` body, as buffers, and its length: sparse, dense ``[d]`` or multi-vector
    ``[n, d]``."""
    if isinstance(value, SparseValues):
        body = sparse(value.indices, value.values)
        return _wrapped(_SPARSE, [body], len(body))
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    if value.dtype == np.uint8 or uint8:
        value = uint8_codec.for_storage(value, uint8)
    if value.ndim == 1:
        data = float32_le(value).data.cast("B")
        head = _DATA + varint(data.nbytes)
        return _wrapped(_DENSE, [head, data], len(head) + data.nbytes)
    if value.ndim == 2 and value.shape[0] > 0:
        table = rows(float32_le(value))
        return _wrapped(_MULTI, [table], table.nbytes)
    raise ValueError(
        f"vector {name!r}: expected [dim] or [rows, dim] with rows >= 1, got shape {value.shape}"
    )


def _wrapped(field_key: bytes, body: Pieces, n: int) -> tuple[Pieces, int]:
    head = field_key + varint(n)
    return [head, *body], len(head) + n


def sparse(indices: Any, values: Any) -> bytes:
    return delimited(_VALUES, float32_le(values).tobytes()) + delimited(
        _INDICES, varints(np.asarray(indices))
    )


def rows(a: np.ndarray) -> memoryview:
    """``MultiDenseVector`` body of float32 rows ``a`` [n, d]: n ``DenseVector`` fields, as
    one byte table [n, header + 4d] (the header, the same for every row, broadcast)."""
    n, d = a.shape
    dense = _DATA + varint(4 * d)  # each row's DenseVector: its data field's key and length
    header = np.frombuffer(_ROW + varint(len(dense) + 4 * d) + dense, dtype=np.uint8)
    table = np.empty((n, header.size + 4 * d), dtype=np.uint8)
    table[:, : header.size] = header
    table[:, header.size :] = a.view(np.uint8).reshape(n, 4 * d)
    return table.data.cast("B")
