"""One open Qdrant Edge shard: its readers-writer lock, the points written since it was last
optimized, whether its indexing is deferred (a full rebuild), the read-ahead of its files after
it is opened, and Edge's bare exceptions turned into errors that name the operation."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from poolq.sinks.store.errors import EdgeError
from poolq.sinks.store.rwlock import RWLock


@contextmanager
def edge_errors(what: str) -> Iterator[None]:
    """Edge raises bare ``Exception``s: name the operation and make them an EdgeError."""
    try:
        yield
    except Exception as e:
        if type(e) is Exception:
            raise EdgeError(f"Qdrant Edge: {what}: {e}") from None
        raise


@dataclass(eq=False)
class Shard:
    name: str
    folder: Path
    shard: Any  # qe.EdgeShard; None once closed for good
    deferred: bool = False
    unlogged: bool = False  # created without a WAL for a bulk load (until finish_build)
    written: int = 0  # points written since the last optimize
    lock: RWLock = field(default_factory=RWLock)


def warm(folder: Path) -> None:
    """Ask the kernel to read a shard's files into the page cache (in the background), except
    the multi-vectors' data: indexes, dense and sparse vectors, ids, payloads. Searches after a
    reopen then find them in memory instead of faulting them in 4 KiB at a time."""
    if not hasattr(os, "posix_fadvise"):  # pragma: no cover - not Linux
        return
    try:
        config = json.loads((folder / "edge_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    multi = [
        f"vector_storage-{name}"
        for name, v in (config.get("vectors") or {}).items()
        if v.get("multivector_config")
    ]
    for path in folder.rglob("*"):
        parts = path.parts
        if any(p in parts for p in multi) and "vectors" in parts:
            continue
        with contextlib.suppress(OSError):
            if path.is_file():
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
                finally:
                    os.close(fd)


def enable_wal(folder: Path) -> None:
    """Turn the WAL of a closed shard created without one back on: Qdrant Edge 0.9 keeps the
    ``wal_enabled`` of ``edge_config.json`` whatever config it is loaded with (measured: a write
    after such a load was lost to SIGKILL); with it unset, loading creates the WAL."""
    path = folder / "edge_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["wal_enabled"] = None
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(config), encoding="utf-8")
    os.replace(tmp, path)


def indexing_deferred(folder: Path) -> bool:
    try:
        config = json.loads((folder / "edge_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (config.get("optimizers") or {}).get("indexing_threshold") == 0
