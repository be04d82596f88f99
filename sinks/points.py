"""Points as the sink writes them: deterministic ids and dense, sparse and multi-vectors."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
from qdrant_client import models

# fixed forever: changing it changes every point id, and re-ingestion would duplicate points
POINT_ID_NAMESPACE = uuid.UUID("6f0c3a52-1d2e-5b8a-9c47-0b9e2d6a4f11")
_NAMESPACE_BYTES = POINT_ID_NAMESPACE.bytes
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True, eq=False)
class SparseValues:
    """A sparse vector: unique non-negative ``indices`` (uint32) with their ``values``
    (float32), as numpy arrays from the pooler to each store's own form: the Edge points'
    lists (``store/edge_convert.py``), the store process's buffers (``store/process_codec.py``),
    gRPC's packed fields (``proto/upsert.py``); converted once on the way to each."""

    indices: np.ndarray  # [n] uint32
    values: np.ndarray  # [n] float32

    def __post_init__(self) -> None:
        idx, val = np.asarray(self.indices), np.asarray(self.values, dtype=np.float32)
        if idx.shape != val.shape or idx.ndim != 1:
            raise ValueError(
                f"sparse vector: expected as many values as indices, "
                f"got {idx.size} indices and {val.size} values"
            )
        if idx.size and (idx.dtype.kind not in "iu" or int(idx.min()) < 0):
            raise ValueError("sparse vector: expected indices >= 0, got a negative one")
        idx = idx.astype(np.uint32, copy=False)
        ordered = idx.size < 2 or bool((idx[1:] > idx[:-1]).all())  # the pooler's order
        if not ordered and np.unique(idx).size != idx.size:
            raise ValueError("sparse vector: expected unique indices, got duplicates")
        object.__setattr__(self, "indices", idx)
        object.__setattr__(self, "values", val)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SparseValues):
            return NotImplemented
        return np.array_equal(self.indices, other.indices) and np.array_equal(
            self.values, other.values
        )

    def __len__(self) -> int:
        return int(self.indices.size)


# Dense and multi-vectors may also be float32 numpy arrays (``[d]``, ``[n, d]``): embedded Qdrant
# stores them without a round trip through Python lists, and a server over gRPC gets their bytes
# (sinks/proto); only qdrant-client's REST path turns them into lists.
VectorValue: TypeAlias = list[float] | SparseValues | list[list[float]] | np.ndarray


@dataclass(frozen=True)
class PointRecord:
    """One point: a UUID string id, named vectors and a JSON payload."""

    id: str
    vectors: dict[str, VectorValue]
    payload: dict[str, Any]

    def __post_init__(self) -> None:
        if type(self.id) is str and _CANONICAL_UUID.fullmatch(self.id):  # point_id's form
            return
        try:
            uuid.UUID(self.id)
        except (ValueError, TypeError, AttributeError):
            raise ValueError(f"point id: expected a UUID string, got {self.id!r}") from None


def point_id(doc_id: str, chunk_index: int) -> str:
    """The id of a document's chunk: a UUID5, the same every time (idempotent re-ingestion):
    ``uuid5(POINT_ID_NAMESPACE, json.dumps([doc_id, chunk_index]))`` (JSON keeps the pair
    unambiguous whatever characters the document id holds), computed as RFC 4122 defines it
    without building a ``uuid.UUID`` (a worker makes one per chunk)."""
    if type(chunk_index) is not int or chunk_index < 0:
        if isinstance(chunk_index, bool) or not isinstance(chunk_index, int) or chunk_index < 0:
            raise ValueError(f"chunk_index: expected an integer >= 0, got {chunk_index!r}")
        chunk_index = int(chunk_index)
    name = "[" + json.dumps(doc_id) + ", " + str(chunk_index) + "]"  # == json.dumps([d, i])
    h = bytearray(hashlib.sha1(_NAMESPACE_BYTES + name.encode("utf-8")).digest()[:16])
    h[6] = (h[6] & 0x0F) | 0x50  # version 5
    h[8] = (h[8] & 0x3F) | 0x80  # RFC 4122 variant
    x = h.hex()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


def to_point_struct(rec: PointRecord, *, arrays_ok: bool = False) -> models.PointStruct:
    """The Qdrant point of a record (sparse vectors become ``models.SparseVector``).

    Built with ``model_construct``: the record's types are already right, and pydantic's
    validation of tens of thousands of floats per multi-vector cost more than the upsert itself.
    ``arrays_ok`` keeps numpy arrays as they are (embedded Qdrant converts with ``np.asarray``).
    """
    vectors = {name: _vector(v, arrays_ok) for name, v in rec.vectors.items()}
    return models.PointStruct.model_construct(id=rec.id, vector=vectors, payload=rec.payload)


def _vector(value: Any, arrays_ok: bool) -> Any:
    if isinstance(value, SparseValues):
        return models.SparseVector.model_construct(
            indices=value.indices.tolist(), values=value.values.tolist()
        )
    if isinstance(value, np.ndarray) and arrays_ok:
        return value
    if hasattr(value, "tolist"):  # numpy arrays and torch tensors
        return value.tolist()
    return value
