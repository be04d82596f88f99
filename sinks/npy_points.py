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
"""

from __future__ import annotations

import json
import os
import uuid
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import models

from poolq.sinks.store import uint8_codec

FORMAT = "poolq-npy"
VERSION = 1
MANIFEST = "manifest.json"
SHARD_POINTS = 1024
_FILE_DTYPES = {"float32": np.float32, "float16": np.float16, "uint8": np.uint8}


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


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    return crc


class NpyWriter:
    """Writes records shard by shard into ``folder`` (which must not exist or be empty)."""

    def __init__(
        self,
        folder: Path,
        collection: str,
        vectors: list[VectorEntry],
        *,
        shard_points: int = SHARD_POINTS,
    ) -> None:
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise NpyExportError(f"{str(folder)!r} exists and is not an empty folder")
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.collection, self.vectors = folder, collection, vectors
        self.shard_points = shard_points
        self.shards: list[dict[str, Any]] = []
        self.points = 0
        self._pending: list[models.Record] = []

    def add(self, records: Sequence[models.Record]) -> None:
        self._pending.extend(records)
        while len(self._pending) >= self.shard_points:
            self._write(self._pending[: self.shard_points])
            del self._pending[: self.shard_points]

    def close(self) -> int:
        """Writes what is left and then the manifest; returns the number of points."""
        if self._pending:
            self._write(self._pending)
            self._pending = []
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "collection": self.collection,
            "points": self.points,
            "vectors": [asdict(v) for v in self.vectors],
            "shards": self.shards,
        }
        tmp = self.folder / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        os.replace(tmp, self.folder / MANIFEST)
        return self.points

    def _write(self, records: Sequence[models.Record]) -> None:
        prefix = f"{len(self.shards):05d}"
        arrays: dict[str, np.ndarray] = {}
        lines = []
        for v in self.vectors:
            arrays.update(_columns(v, records, prefix))
        for r in records:
            stored = r.vector if isinstance(r.vector, dict) else {}
            line: dict[str, Any] = {"id": str(r.id), "payload": r.payload or {}}
            absent = [v.name for v in self.vectors if v.name not in stored]
            if absent:
                line["absent"] = absent
            lines.append(
                json.dumps(line, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
            )
        files: dict[str, dict[str, int]] = {}
        points_file = self.folder / f"{prefix}.points.jsonl"
        points_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        for name, array in arrays.items():
            np.save(self.folder / name, array, allow_pickle=False)
        for name in [points_file.name, *arrays]:
            path = self.folder / name
            files[name] = {"bytes": path.stat().st_size, "crc32": _crc32(path)}
        self.shards.append({"name": prefix, "points": len(records), "files": files})
        self.points += len(records)


def _columns(
    v: VectorEntry, records: Sequence[models.Record], prefix: str
) -> dict[str, np.ndarray]:
    """One vector's arrays for a shard of records (file name -> array)."""
    offsets = np.zeros(len(records) + 1, dtype=np.int64)
    values: list[Any] = [
        r.vector.get(v.name) if isinstance(r.vector, dict) else None for r in records
    ]
    base = f"{prefix}.{v.key}"
    if v.kind == "sparse":
        idx, val = [], []
        for i, x in enumerate(values):
            n = 0 if x is None else len(x.indices)
            offsets[i + 1] = offsets[i] + n
            if x is not None:
                idx.append(np.asarray(x.indices, dtype=np.uint32))
                val.append(np.asarray(x.values, dtype=np.float32))
        return {
            f"{base}.indices.npy": _cat(idx, np.uint32, None),
            f"{base}.values.npy": _cat(val, np.float32, None),
            f"{base}.offsets.npy": offsets,
        }
    rows = []
    for i, x in enumerate(values):
        if x is None:
            offsets[i + 1] = offsets[i]
            continue
        a = np.asarray(x, dtype=np.float32).reshape(-1, v.size or 1)
        rows.append(a)
        offsets[i + 1] = offsets[i] + len(a)
    dtype = _FILE_DTYPES[v.datatype]
    data = _cat(rows, np.float32, v.size)
    data = uint8_codec.encode(data) if dtype is np.uint8 else data.astype(dtype, copy=False)
    return {f"{base}.npy": data, f"{base}.offsets.npy": offsets}


def _cat(parts: list[np.ndarray], dtype: Any, size: int | None) -> np.ndarray:
    if not parts:
        return np.zeros((0,) if size is None else (0, size), dtype=dtype)
    return np.concatenate(parts)


# -- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Manifest:
    folder: Path
    collection: str
    points: int
    vectors: list[VectorEntry]
    shards: list[dict[str, Any]]


def read_manifest(folder: Path) -> Manifest:
    """The manifest of an export, every file it lists checked (there, its size, its CRC-32)."""
    path = folder / MANIFEST
    if not path.is_file():
        raise NpyExportError(
            f"{str(folder)!r} holds no {MANIFEST}: not an export, or one that was interrupted"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise NpyExportError(f"{str(path)!r}: not JSON ({e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise NpyExportError(f"{str(path)!r}: format: expected {FORMAT!r}")
    if data.get("version") != VERSION:
        raise NpyExportError(
            f"{str(path)!r}: version: expected {VERSION}, got {data.get('version')!r}"
        )
    try:
        vectors = [VectorEntry(**v) for v in data["vectors"]]
        shards = list(data["shards"])
        points = int(data["points"])
        collection = str(data["collection"])
        for v in vectors:
            if v.kind not in ("dense", "multi", "sparse") or (
                v.kind != "sparse" and v.datatype not in _FILE_DTYPES
            ):
                raise ValueError(f"vector {v.name!r}: kind {v.kind!r}, datatype {v.datatype!r}")
        if sum(int(s["points"]) for s in shards) != points:
            raise ValueError("the shards' points do not add up to points")
    except (KeyError, TypeError, ValueError) as e:
        raise NpyExportError(
            f"{str(path)!r}: malformed manifest ({type(e).__name__}: {e})"
        ) from None
    manifest = Manifest(folder, collection, points, vectors, shards)
    for shard in shards:
        _check_files(manifest, shard)
    return manifest


def _check_files(m: Manifest, shard: dict[str, Any]) -> None:
    """Every file of a shard there, of the size and CRC-32 the manifest says."""
    for name, want in shard["files"].items():
        path = m.folder / name
        if not path.is_file():
            raise NpyExportError(f"{str(path)!r}: missing (listed in {MANIFEST})")
        size = path.stat().st_size
        if size != want["bytes"]:
            raise NpyExportError(
                f"{str(path)!r}: {size} bytes, {MANIFEST} says {want['bytes']} (truncated?)"
            )
        if _crc32(path) != want["crc32"]:
            raise NpyExportError(f"{str(path)!r}: CRC-32 differs from {MANIFEST} (corrupt)")


def iter_points(m: Manifest) -> Iterator[tuple[str, models.PointStruct]]:
    """Every point, shard by shard (``where`` names the shard file and the point); the files
    were checked by :func:`read_manifest`, the arrays' datatypes, shapes and offsets are checked
    here before any of a shard's points is given out."""
    for shard in m.shards:
        yield from _shard_points(m, shard)


def _shard_points(m: Manifest, shard: dict[str, Any]) -> Iterator[tuple[str, models.PointStruct]]:
    n = int(shard["points"])
    prefix = shard["name"]
    points_path = m.folder / f"{prefix}.points.jsonl"
    lines = points_path.read_text(encoding="utf-8").splitlines()
    if len(lines) != n:
        raise NpyExportError(f"{str(points_path)!r}: {len(lines)} points, expected {n}")
    columns = {v.name: _read_columns(m.folder, prefix, v, n) for v in m.vectors}
    for i, text in enumerate(lines):
        where = f"{points_path.name}: point {i}"
        try:
            line = json.loads(text)
            pid = _point_id(line["id"])
            payload = line.get("payload", {})
            absent = set(line.get("absent", ()))
        except (ValueError, KeyError, TypeError) as e:
            raise NpyExportError(
                f"{str(points_path)!r}: point {i}: {type(e).__name__}: {e}"
            ) from None
        if not isinstance(payload, dict):
            raise NpyExportError(f"{str(points_path)!r}: point {i}: payload must be an object")
        vectors: dict[str, Any] = {}
        for v in m.vectors:
            if v.name in absent:
                continue
            arrays, offsets = columns[v.name]
            a, b = offsets[i], offsets[i + 1]
            if v.kind == "sparse":
                vectors[v.name] = models.SparseVector.model_construct(
                    indices=arrays[0][a:b].tolist(), values=arrays[1][a:b].tolist()
                )
            elif v.kind == "dense":
                if b - a != 1:
                    raise NpyExportError(
                        f"{str(m.folder / f'{prefix}.{v.key}.offsets.npy')!r}: point {i}: "
                        f"vector {v.name!r}: expected 1 row, got {b - a}"
                    )
                vectors[v.name] = arrays[0][a]
            else:
                if b == a:
                    raise NpyExportError(
                        f"{str(m.folder / f'{prefix}.{v.key}.offsets.npy')!r}: point {i}: "
                        f"multi-vector {v.name!r} has no rows"
                    )
                vectors[v.name] = arrays[0][a:b]
        yield where, models.PointStruct.model_construct(id=pid, vector=vectors, payload=payload)


def _read_columns(
    folder: Path, prefix: str, v: VectorEntry, n: int
) -> tuple[list[np.ndarray], np.ndarray]:
    base = f"{prefix}.{v.key}"
    offsets = _load(folder / f"{base}.offsets.npy", np.int64, (n + 1,), v.name)
    names = ("indices", "values") if v.kind == "sparse" else ("",)
    arrays = []
    for part in names:
        path = folder / (f"{base}.{part}.npy" if part else f"{base}.npy")
        if v.kind == "sparse":
            dtype: Any = np.uint32 if part == "indices" else np.float32
            shape: tuple[int | None, ...] = (None,)
        else:
            dtype, shape = _FILE_DTYPES[v.datatype], (None, v.size)
        arrays.append(_load(path, dtype, shape, v.name))
    rows = len(arrays[0])
    if (
        offsets[0] != 0
        or offsets[-1] != rows
        or np.any(np.diff(offsets) < 0)
        or any(len(a) != rows for a in arrays)
    ):
        raise NpyExportError(
            f"{str(folder / f'{base}.offsets.npy')!r}: vector {v.name!r}: offsets do not cover "
            f"its {rows} rows in order"
        )
    for a in arrays:
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise NpyExportError(
                f"{str(folder / base)!r}*: vector {v.name!r}: a value is not finite"
            )
    return arrays, offsets


def _load(path: Path, dtype: Any, shape: tuple[int | None, ...], name: str) -> np.ndarray:
    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise NpyExportError(f"{str(path)!r}: vector {name!r}: not a readable .npy ({e})") from None
    want_shape = "[" + ", ".join("n" if s is None else str(s) for s in shape) + "]"
    if (
        a.dtype != np.dtype(dtype)
        or a.ndim != len(shape)
        or any(s is not None and s != g for s, g in zip(shape, a.shape, strict=False))
    ):
        raise NpyExportError(
            f"{str(path)!r}: vector {name!r}: expected {np.dtype(dtype).name} {want_shape}, got "
            f"{a.dtype.name} {list(a.shape)}"
        )
    return a


def _point_id(raw: Any) -> str | int:
    if isinstance(raw, str) and raw.isdigit():
        return int(raw)
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        return raw
    return str(uuid.UUID(raw))
