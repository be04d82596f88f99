"""Points as ``.npy`` shards with a JSON manifest, the default format of ``poolq export`` and
``poolq import`` (JSON lines, ``sinks/jsonl_points.py``, stay as an option). An export is a
folder::

    manifest.json              written last: no manifest, no export (an interrupted one)
    00000.points.jsonl         per point: {"id": ..., "payload": {...}} (+ "absent": [names])
    00000.v0.npy               vector v0's rows: [rows, size]; a dense vector 1 row a point,
    00000.v0.offsets.npy       a multi-vector its tokens; int64 [points + 1]: point i's rows
    00000.v2.indices.npy       a sparse vector: uint32 indices, float32 values, int64 offsets
    00000.v2.values.npy
    00000.v2.offsets.npy

Rows are held in the collection's stored datatype (float32, float16, or the uint8 codes of
``sinks/store/uint8_codec.py``), so the file is about the size of the stored vectors and a round
trip gives the stored values back bit for bit. The manifest names every vector (name, kind,
size, datatype, the file key ``vN``) and every shard's files with their size and CRC-32; reading
checks them all and names the file and the field of anything wrong, in one line.

This module is the format (names, manifest, vector entries); ``npy_writer.py`` writes an export
and ``npy_reader.py`` reads one.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import models

FORMAT = "poolq-npy"
VERSION = 1
MANIFEST = "manifest.json"
SHARD_POINTS = 1024
FILE_DTYPES = {"float32": np.float32, "float16": np.float16, "uint8": np.uint8}


class NpyExportError(ValueError):
    """An ``.npy`` export that cannot be read (the message names the file and the field)."""


@dataclass(frozen=True)
class VectorEntry:
    name: str
    kind: str  # dense, multi, sparse
    size: int | None
    datatype: str  # float32, float16, uint8 (sparse: float32)
    key: str  # file key: v0, v1, ...


def entries_of(params: models.CollectionParams) -> list[VectorEntry]:
    """The vectors of a collection's parameters, in name order."""
    dense = params.vectors if isinstance(params.vectors, dict) else {}
    found: list[tuple[str, str, int | None, str]] = []
    for name, p in dense.items():
        kind = "multi" if p.multivector_config is not None else "dense"
        datatype = (
            "float32" if p.datatype is None else str(getattr(p.datatype, "value", p.datatype))
        )
        found.append((name, kind, p.size, datatype))
    found += [(name, "sparse", None, "float32") for name in (params.sparse_vectors or {})]
    return [VectorEntry(n, k, s, d, f"v{i}") for i, (n, k, s, d) in enumerate(sorted(found))]


def crc32_of(path: Path) -> int:
    crc = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    return crc


@dataclass(frozen=True)
class Manifest:
    folder: Path
    collection: str
    points: int
    vectors: list[VectorEntry]
    shards: list[dict[str, Any]]
