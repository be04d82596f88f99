"""Writing an ``.npy`` export (the format: ``npy_points.py``), shard by shard, the manifest last."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import models

from poolq.sinks.npy_points import (
    FILE_DTYPES,
    FORMAT,
    MANIFEST,
    SHARD_POINTS,
    VERSION,
    NpyExportError,
    VectorEntry,
    crc32_of,
)
from poolq.sinks.store import uint8_codec


class NpyWriter:
    """Writes records shard by shard into ``folder`` (which must not exist or be empty)."""

    def __init__(self, folder: Path, collection: str, vectors: list[VectorEntry]) -> None:
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise NpyExportError(f"{str(folder)!r} exists and is not an empty folder")
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.collection, self.vectors = folder, collection, vectors
        self.shards: list[dict[str, Any]] = []
        self.points = 0
        self._pending: list[models.Record] = []

    def add(self, records: Sequence[models.Record]) -> None:
        self._pending.extend(records)
        while len(self._pending) >= SHARD_POINTS:
            self._write(self._pending[:SHARD_POINTS])
            del self._pending[:SHARD_POINTS]

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
            files[name] = {"bytes": path.stat().st_size, "crc32": crc32_of(path)}
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
    dtype = FILE_DTYPES[v.datatype]
    data = _cat(rows, np.float32, v.size)
    data = uint8_codec.encode(data) if dtype is np.uint8 else data.astype(dtype, copy=False)
    return {f"{base}.npy": data, f"{base}.offsets.npy": offsets}


def _cat(parts: list[np.ndarray], dtype: Any, size: int | None) -> np.ndarray:
    if not parts:
        return np.zeros((0,) if size is None else (0, size), dtype=dtype)
    return np.concatenate(parts)
