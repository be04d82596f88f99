"""The folder of an embedded store: Qdrant Edge shards behind names, and one process at a time.

Qdrant Edge has no aliases and no list of collections: a shard is one collection in one folder.
The catalog is the map from names to folders::

    DIR/catalog.json      {"format": "poolq-edge-store", "version": 1,
                           "collections": {name: folder}, "aliases": {alias: name}}
    DIR/shards/FOLDER/    one EdgeShard per physical collection
    DIR/.lock             held (flock) by the process that has the store open; holds its pid

Every change rewrites ``catalog.json`` whole and renames it into place (write, fsync, rename,
fsync the folder), so after a crash the file is the old map or the new one. A shard folder the
catalog does not name (a creation or a drop cut short by a crash) is removed on open.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Any

from poolq.sinks.folder_lock import LOCK_NAME as FOLDER_LOCK
from poolq.sinks.store.errors import NotAStoreError, StoreLockedError

FORMAT = "poolq-edge-store"
VERSION = 1
CATALOG = "catalog.json"
SHARDS = "shards"
LOCK = ".lock"


def is_local_mode_folder(path: Path) -> bool:
    """A folder qdrant-client's local mode wrote (``meta.json`` + ``collection/``)."""
    return (path / "meta.json").is_file() and not (path / CATALOG).exists()


def migration_hint(path: Path) -> str:
    return (
        f"{str(path)!r} is a qdrant-client local-mode folder (the embedded store before Qdrant "
        "Edge); move each collection onto Qdrant Edge with `poolq export --collection C "
        f"--qdrant-path {path} -o C.jsonl` then `poolq import C.jsonl --collection C "
        "--qdrant-path NEW_DIR`, and point the worker at NEW_DIR"
    )


class Catalog:
    """The open folder (see the module docstring). Not thread-safe: the store serialises."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.collections: dict[str, str] = {}
        self.aliases: dict[str, str] = {}
        self._lock_fd: int | None = None
        self._open()

    # -- opening -----------------------------------------------------------------------------

    def _open(self) -> None:
        path = self.path
        if path.exists() and not path.is_dir():
            raise NotAStoreError(f"{str(path)!r} is a file, not a folder for Qdrant Edge")
        if is_local_mode_folder(path):
            raise NotAStoreError(migration_hint(path))
        path.mkdir(parents=True, exist_ok=True)
        catalog = path / CATALOG
        if not catalog.exists():
            # the worker's own folder lock (sinks/folder_lock.py) is taken before the store opens
            ours = (LOCK, SHARDS, FOLDER_LOCK)
            strangers = sorted(p.name for p in path.iterdir() if p.name not in ours)
            if strangers:
                raise NotAStoreError(
                    f"{str(path)!r} holds {strangers[:3]} but no {CATALOG}: not an embedded "
                    "poolq store; give an empty or new folder"
                )
        self._lock()
        try:
            if catalog.exists():
                self._read(catalog)
            else:
                self.save()
            self._remove_orphans()
        except BaseException:
            self.close()
            raise

    def _lock(self) -> None:
        fd = os.open(self.path / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreLockedError(
                f"the Qdrant Edge folder {str(self.path)!r} is held by another process "
                f"(pid {holder}: a running worker?); stop it first, or search and reindex "
                "through it"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    def _read(self, catalog: Path) -> None:
        try:
            data = json.loads(catalog.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise NotAStoreError(f"{str(catalog)!r} is unreadable: {e}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise NotAStoreError(f"{str(catalog)!r} is not a poolq embedded-store catalog")
        if data.get("version") != VERSION:
            raise NotAStoreError(
                f"{str(catalog)!r} has version {data.get('version')!r}; this poolq reads "
                f"version {VERSION}"
            )
        self.collections = dict(data.get("collections") or {})
        self.aliases = dict(data.get("aliases") or {})

    def _remove_orphans(self) -> None:
        shards = self.path / SHARDS
        shards.mkdir(exist_ok=True)
        known = set(self.collections.values())
        for folder in shards.iterdir():
            if folder.name not in known:
                shutil.rmtree(folder, ignore_errors=True)

    # -- changes -----------------------------------------------------------------------------

    def folder(self, name: str) -> Path:
        return self.path / SHARDS / self.collections[name]

    def new_folder(self, name: str) -> str:
        """A fresh folder name for the physical collection ``name`` (not yet in the map)."""
        slug = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80].lstrip(".") or "c"
        return f"{slug}-{secrets.token_hex(4)}"

    def save(self) -> None:
        data: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "collections": self.collections,
            "aliases": self.aliases,
        }
        tmp = self.path / f".{CATALOG}.{secrets.token_hex(4)}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True, ensure_ascii=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path / CATALOG)  # atomic: the old map or the new one
        _fsync_dir(self.path)

    def close(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every filesystem can
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
