"""Where documents come from: a JSONL file, or a folder of text files.

A folder's documents are its ``*.txt`` and ``*.md`` files (or those ``include`` globs name,
less those ``exclude`` globs name), hidden files and folders left out unless ``hidden``. A
file's id is its absolute path (the folder resolved, then the file's path inside it, symlinks
inside the folder kept as named): unique across folders, and the same however the folder is
written on the command line, by ``poolq enqueue`` or a worker's reindex. ``metadata.path`` is
the path relative to the folder. What a source left out is named in ``hidden``,
``not_included``, ``excluded`` and ``errors`` (unreadable files, broken JSONL lines).

Both sides read sources by these rules (the client's ``poolq enqueue``, a worker's reindex
planning), so they live in the wire: the standard library only.

Application code can implement :class:`Source` for its own stores.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, Protocol, cast

TEXT_SUFFIXES = (".txt", ".md")
DEFAULT_INCLUDE: tuple[str, ...] = ("*.txt", "*.md")


class Source(Protocol):
    def documents(self) -> Iterator[dict[str, Any]]:
        """Yield ``{"id", "text", "metadata"?}`` dicts (validated later, per document)."""
        ...


def _json_reason(exc: json.JSONDecodeError) -> str:
    """``Expecting ',' delimiter at column 10`` (``exc.msg`` alone stops at "at")."""
    msg = exc.msg if exc.msg.endswith(" at") else f"{exc.msg} at"
    return f"{msg} column {exc.colno}"


class JsonlSource:
    """One JSON object per line; blank lines are skipped, other bad lines are ``errors``
    (``FILE:LINE: reason``) and the rest are read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[str] = []

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """``("FILE:LINE", document)`` for every line that holds a JSON object."""
        with self.path.open(encoding="utf-8", errors="surrogateescape") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                where = f"{self.path}:{lineno}"
                try:
                    obj = json.loads(line.rstrip("\r\n"))
                except json.JSONDecodeError as exc:
                    self.errors.append(f"{where}: invalid JSON: {_json_reason(exc)}")
                    continue
                except UnicodeError as exc:  # undecodable bytes (surrogates) in the line
                    self.errors.append(
                        f"{where}: not UTF-8 text ({cast('UnicodeDecodeError', exc).reason})"
                    )
                    continue
                if not isinstance(obj, dict):
                    got = cast("dict[type, str]", {list: "a list", str: "a string"}).get(
                        type(obj), type(obj).__name__
                    )
                    self.errors.append(f"{where}: expected a JSON object, got {got}")
                    continue
                yield where, obj

    def documents(self) -> Iterator[dict[str, Any]]:
        for _, doc in self.entries():
            yield doc


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    """A glob without '/' matches the file name, one with '/' the path inside the folder; case
    does not matter (``*.md`` matches ``README.MD``)."""
    rel = rel.lower()
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch(rel if "/" in p else name, p.lower()) for p in patterns)


class FolderSource:
    def __init__(
        self,
        root: Path,
        *,
        include: Sequence[str] = DEFAULT_INCLUDE,
        exclude: Sequence[str] = (),
        hidden: bool = False,
    ) -> None:
        self.root = Path(root)
        self.include = tuple(include) or DEFAULT_INCLUDE
        self.exclude = tuple(exclude)
        self.read_hidden = hidden
        self.errors: list[str] = []
        self.hidden: list[str] = []  # hidden files and folders left out (folders not entered)
        self.not_included: list[str] = []  # files no include glob names
        self.excluded: list[str] = []  # files an exclude glob names

    def _files(self) -> Iterator[tuple[str, Path]]:
        base = Path(os.path.abspath(self.root.resolve()))
        for dirpath, dirnames, filenames in os.walk(base):
            here = Path(dirpath)
            rel_dir = here.relative_to(base).as_posix()
            prefix = "" if rel_dir == "." else rel_dir + "/"
            dirnames.sort()
            if not self.read_hidden:
                self.hidden += [prefix + d for d in dirnames if d.startswith(".")]
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in sorted(filenames):
                rel = prefix + name
                if not self.read_hidden and name.startswith("."):
                    self.hidden.append(rel)
                elif not _matches(rel, self.include):
                    self.not_included.append(rel)
                elif _matches(rel, self.exclude):
                    self.excluded.append(rel)
                elif (here / name).is_file():
                    yield rel, here / name

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(id, document)`` for every file read, in path order."""
        self.errors, self.hidden, self.not_included, self.excluded = [], [], [], []
        for rel, path in self._files():
            doc_id = path.as_posix()
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError) as exc:
                self.errors.append(f"{doc_id}: cannot read as UTF-8 text ({exc})")
                continue
            yield doc_id, {"id": doc_id, "text": text, "metadata": {"path": rel}}

    def documents(self) -> Iterator[dict[str, Any]]:
        for _, doc in self.entries():
            yield doc

    def skipped(self) -> list[tuple[str, list[str]]]:
        """What was left out and why, for a summary (after reading)."""
        return [
            (f"not matching {', '.join(self.include)}", self.not_included),
            (f"matching --exclude {', '.join(self.exclude)}", self.excluded),
            ("hidden", self.hidden),
        ]


def open_source(
    path: str | Path,
    *,
    include: Sequence[str] = DEFAULT_INCLUDE,
    exclude: Sequence[str] = (),
    hidden: bool = False,
) -> JsonlSource | FolderSource:
    p = Path(path)
    if p.is_dir():
        return FolderSource(p, include=include, exclude=exclude, hidden=hidden)
    if p.is_file():
        return JsonlSource(p)
    raise FileNotFoundError(f"input {str(p)!r} is neither a JSONL file nor a folder")
