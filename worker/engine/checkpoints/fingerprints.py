"""Checkpoint fingerprints (a sha256 over a model folder's files: ``checkpoint_fingerprint``), and
the same without re-reading every byte at each start (``cached_fingerprint``).

A worker fingerprints each model folder to version its points. The result is kept in
``fingerprints.json`` under the cache folder (setting ``cache_dir``, else ``$XDG_CACHE_HOME/poolq``,
else ``~/.cache/poolq``), keyed by the folder's absolute path and the name, size, modification
time (ns) and inode of every file the fingerprint covers: a file replaced or rewritten in place
changes its size or mtime and is hashed again. (A rewrite that restores the old mtime to the
nanosecond is not seen; remove the cache file then.) When the cache cannot be read or written,
the fingerprint is computed in full.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from poolq.worker.engine.process_options import process_options

log = logging.getLogger("poolq.worker")
CACHE_FILE = "fingerprints.json"
_FINGERPRINT_SUFFIXES = (".json", ".safetensors", ".bin", ".pt", ".txt", ".model")
_CHUNK = 1 << 20


def fingerprint_files(path: str | Path) -> list[Path]:
    """The files a checkpoint fingerprint covers, sorted."""
    root = Path(path)
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in _FINGERPRINT_SUFFIXES)


def checkpoint_fingerprint(path: str | Path) -> str:
    """sha256 over the names and contents of a model folder's config, tokenizer and weight
    files (reads every byte once: about a second per GB)."""
    root = Path(path)
    h = hashlib.sha256()
    for p in fingerprint_files(root):
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        with p.open("rb") as f:
            while block := f.read(_CHUNK):
                h.update(block)
    return h.hexdigest()


def cache_dir() -> Path:
    if folder := process_options().cache_dir:
        return Path(folder)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "poolq"


def _stat_key(path: Path) -> str:
    root = path.resolve()
    entries = []
    for f in fingerprint_files(root):
        st = f.stat()
        entries.append([f.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns, st.st_ino])
    blob = json.dumps([str(root), entries], separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def cached_fingerprint(path: str | Path) -> str:
    """``checkpoint_fingerprint(path)``, from the cache when no covered file has changed."""
    file = cache_dir() / CACHE_FILE
    key = _stat_key(Path(path))
    try:
        cache = json.loads(file.read_text())
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, ValueError):
        cache = {}
    if isinstance(hit := cache.get(key), str):
        return hit
    fingerprint = checkpoint_fingerprint(path)
    cache[key] = fingerprint
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache))
        tmp.replace(file)  # atomic: concurrent workers never read half a file
    except OSError as exc:
        log.debug("fingerprint cache not written (%s): %s", file, exc)
    return fingerprint
