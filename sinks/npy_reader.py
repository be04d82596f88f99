"""Reading an ``.npy`` export (the format: ``npy_points.py``): the manifest, every file it lists
checked, then the points shard by shard."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import models

from poolq.sinks.npy_points import (
    FILE_DTYPES,
    FORMAT,
    MANIFEST,
    VERSION,
    Manifest,
    NpyExportError,
    VectorEntry,
    crc32_of,
)


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
                v.kind != "sparse" and v.datatype not in FILE_DTYPES
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
        if crc32_of(path) != want["crc32"]:
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
            dtype, shape = FILE_DTYPES[v.datatype], (None, v.size)
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
