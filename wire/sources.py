"""Where documents come from: a JSONL file, or a folder of files to parse.

A folder's documents are its files (those ``include`` globs name, default every file, less
those ``exclude`` globs name), hidden files and folders left out unless ``hidden``. Each file's
type is sniffed from its bytes (:mod:`poolq.wire.sniff`): images, stylesheets, archives and
other files that are not documents are left out and named (``not_documents``), not errors. A
file's id is its absolute path (the folder resolved, then the file's path inside it, symlinks
inside the folder kept as named): unique across folders, and the same however the folder is
written on the command line, by ``poolq enqueue`` or a worker's reindex. ``metadata.path`` and
the citation ``source`` are the path relative to the folder. What a source left out is named
in ``hidden``, ``not_included``, ``excluded``, ``not_documents`` and ``errors`` (unreadable
files, files over the byte limit, broken JSONL lines).

Both sides read sources by these rules (the client's ``poolq enqueue``, a worker's reindex
planning), so they live in the wire: the standard library only.

Application code can implement :class:`Source` for its own stores.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from poolq.wire import constants
from poolq.wire.sniff import describe, is_document, sniff

DEFAULT_INCLUDE: tuple[str, ...] = ("*",)
SNIFF_BYTES = 1 << 16  # read of a file to tell its type (a zip: the whole of it)


class Source(Protocol):
    def documents(self) -> Iterator[dict[str, Any]]:
        """Yield ``{"id", "text", "metadata"?}`` dicts, or file documents (``wire/files.py``)
        (validated later, per document)."""
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


class _Globs:
    """Globs as one test: one without '/' matches the file name, one with '/' the path inside
    the folder; case does not matter (``*.md`` matches ``README.MD``)."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.every = "*" in patterns

        def one(ps: list[str]) -> re.Pattern[str] | None:
            return re.compile("|".join(fnmatch.translate(p.lower()) for p in ps)) if ps else None

        self.name = one([p for p in patterns if "/" not in p])
        self.path = one([p for p in patterns if "/" in p])

    def __call__(self, rel: str) -> bool:
        if self.every:
            return True
        rel = rel.lower()
        if self.name is not None and self.name.match(rel.rsplit("/", 1)[-1]):
            return True
        return self.path is not None and self.path.match(rel) is not None


@dataclass(frozen=True)
class FolderFile:
    """A document file of a folder: its id (absolute path), where it is, its path relative to
    the folder (``metadata.path`` and the citation's ``source``), its size and sniffed type."""

    id: str
    path: Path
    rel: str
    size: int
    mime: str

    def document(self) -> dict[str, Any]:
        """The file document that sends it to be parsed (its bytes read now)."""
        return {
            "id": self.id,
            "bytes": self.path.read_bytes(),
            "source": self.rel,
            "metadata": {"path": self.rel},
        }


class FolderSource:
    def __init__(
        self,
        root: Path,
        *,
        include: Sequence[str] = DEFAULT_INCLUDE,
        exclude: Sequence[str] = (),
        hidden: bool = False,
        max_file_bytes: int = constants.MAX_FILE_BYTES,
    ) -> None:
        self.root = Path(root)
        self.max_file_bytes = max_file_bytes
        self.not_documents: list[str] = []  # files whose type is no document, with the type
        self.include = tuple(include) or DEFAULT_INCLUDE
        self.exclude = tuple(exclude)
        self.read_hidden = hidden
        self.errors: list[str] = []
        self.hidden: list[str] = []  # hidden files and folders left out (folders not entered)
        self.not_included: list[str] = []  # files no include glob names
        self.excluded: list[str] = []  # files an exclude glob names

    def _files(self) -> Iterator[tuple[str, Path, int]]:
        """``(path inside the folder, path, size)`` of every regular file the globs let in."""
        base = Path(os.path.abspath(self.root.resolve()))
        include, exclude = _Globs(self.include), _Globs(self.exclude)
        for dirpath, dirnames, filenames in os.walk(base):
            rel_dir = os.path.relpath(dirpath, base).replace(os.sep, "/")
            prefix = "" if rel_dir == "." else rel_dir + "/"
            dirnames.sort()
            if not self.read_hidden:
                self.hidden += [prefix + d for d in dirnames if d.startswith(".")]
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in sorted(filenames):
                rel = prefix + name
                if not self.read_hidden and name.startswith("."):
                    self.hidden.append(rel)
                elif not include(rel):
                    self.not_included.append(rel)
                elif exclude(rel):
                    self.excluded.append(rel)
                else:
                    path = Path(dirpath, name)
                    try:
                        st = path.stat()  # one stat a file: its kind and its size
                    except OSError:  # a broken link: not a file
                        continue
                    if stat.S_ISREG(st.st_mode):
                        yield rel, path, st.st_size

    def files(self) -> Iterator[FolderFile]:
        """Every document file of the folder, in path order, its type sniffed from its bytes
        (which are not kept: :meth:`FolderFile.document` reads them again when they are sent)."""
        self.errors, self.hidden, self.not_included, self.excluded = [], [], [], []
        self.not_documents = []
        for rel, path, size in self._files():
            doc_id = path.as_posix()
            try:
                with path.open("rb") as f:
                    data = f.read(SNIFF_BYTES)
                    if data.startswith(b"PK") and size <= self.max_file_bytes:
                        data += f.read()  # a zip's type is in its member names
            except OSError as exc:
                self.errors.append(f"{doc_id}: cannot be read ({exc.strerror or exc})")
                continue
            mime = sniff(data, path.name)
            if not is_document(mime):
                self.not_documents.append(f"{rel} ({describe(mime)})")
            elif size > self.max_file_bytes:
                self.errors.append(
                    f"{doc_id}: {size} bytes, over the limit of {self.max_file_bytes} bytes per "
                    "file (--max-file-bytes); not sent"
                )
            else:
                yield FolderFile(doc_id, path, rel, size, mime)

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(id, file document)`` for every document file, its bytes read (``wire/files.py``)."""
        for f in self.files():
            try:
                yield f.id, f.document()
            except OSError as exc:
                self.errors.append(f"{f.id}: cannot be read ({exc.strerror or exc})")

    def documents(self) -> Iterator[dict[str, Any]]:
        for _, doc in self.entries():
            yield doc

    def skipped(self) -> list[tuple[str, list[str]]]:
        """What was left out and why, for a summary (after reading)."""
        return [
            (f"not matching {', '.join(self.include)}", self.not_included),
            (f"matching --exclude {', '.join(self.exclude)}", self.excluded),
            ("not documents", self.not_documents),
            ("hidden", self.hidden),
        ]


def open_source(
    path: str | Path,
    *,
    include: Sequence[str] = DEFAULT_INCLUDE,
    exclude: Sequence[str] = (),
    hidden: bool = False,
    max_file_bytes: int = constants.MAX_FILE_BYTES,
) -> JsonlSource | FolderSource:
    p = Path(path)
    if p.is_dir():
        return FolderSource(
            p, include=include, exclude=exclude, hidden=hidden, max_file_bytes=max_file_bytes
        )
    if p.is_file():
        return JsonlSource(p)
    raise FileNotFoundError(f"input {str(p)!r} is neither a JSONL file nor a folder")
