"""What ``poolq enqueue`` sends: the input read and checked here, before anything is enqueued.

Every entry that will not be sent is a :class:`Problem` naming where it is (``FILE:LINE`` in a
JSONL file, the file's path in a folder), the document's id and the reason: broken JSON lines,
documents a worker would refuse (no id, no text, bad metadata, a repeated id, over the workers'
size limits). What a folder leaves out on purpose (other extensions, ``--exclude``, hidden
files, files that are no document: images, stylesheets, archives) is a note: named in the
summary, not an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from poolq.wire.documents import Document, validate_document
from poolq.wire.job_plan import Limits
from poolq.wire.serialization import serialize
from poolq.wire.sources import FolderFile, FolderSource, open_source

NAMES_SHOWN = 5  # skipped files named in a note, then "and N more"


@dataclass(frozen=True)
class Problem:
    where: str  # FILE:LINE, or the file's path
    doc_id: str | None
    message: str

    def line(self) -> str:
        if self.doc_id is None:
            return f"{self.where}: {self.message}" if self.where else self.message
        if self.where == self.doc_id:  # a folder's file: its id is its path
            return f"document {self.doc_id!r}: {self.message}"
        return f"{self.where}: document {self.doc_id!r}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"where": self.where, "id": self.doc_id, "error": self.message}


@dataclass
class Prepared:
    documents: list[dict[str, Any]] = field(default_factory=list)  # text documents (JSONL)
    files: list[FolderFile] = field(default_factory=list)  # a folder's files, read when sent
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    read: int = 0  # entries read (documents, files and broken lines)

    @property
    def count(self) -> int:
        """Documents and files to send."""
        return len(self.documents) + len(self.files)


def folder_notes(source: FolderSource) -> list[str]:
    notes = []
    for why, names in source.skipped():
        if names:
            shown = ", ".join(names[:NAMES_SHOWN])
            more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
            noun = "file" if len(names) == 1 else "files"
            what = "hidden" if why == "hidden" else f"{noun} {why}"
            notes.append(f"skipped {len(names)} {what}: {shown}{more}")
    return notes


def _problem(where: str, raw: Any, doc: Any) -> Problem:
    doc_id = raw.get("id") if isinstance(raw, dict) else None
    if not isinstance(doc_id, str) or not doc_id:
        return Problem(where, None, f"document without an id: {doc.field}: {doc.message}")
    return Problem(where, doc_id, f"{doc.field}: {doc.message}")


def prepare(
    input_path: Path,
    collection: str,
    limits: Limits,
    *,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    hidden: bool = False,
) -> Prepared:
    """The documents to send, and what is left out and why."""
    kwargs: dict[str, Any] = {
        "exclude": exclude, "hidden": hidden, "max_file_bytes": limits.max_file_bytes
    }  # fmt: skip
    if include:
        kwargs["include"] = include
    source = open_source(input_path, **kwargs)
    out = Prepared()
    if isinstance(source, FolderSource):
        return _prepare_folder(source, out)
    first: dict[str, str] = {}
    budget = limits.job_budget(collection)
    seen_errors = 0

    def source_errors() -> None:  # what the source could not read, in input order
        nonlocal seen_errors
        for e in source.errors[seen_errors:]:
            out.problems.append(Problem("", None, e))
            out.read += 1
        seen_errors = len(source.errors)

    for where, raw in source.entries():
        source_errors()
        out.read += 1
        if too_big := limits.document_problem(raw):
            doc_id = raw.get("id")
            if isinstance(doc_id, str) and doc_id:
                out.problems.append(Problem(where, doc_id, f"{too_big}; not sent"))
            else:
                out.problems.append(Problem(where, None, f"document without an id: {too_big}"))
            continue
        doc = validate_document(raw, 0, max_bytes=limits.max_document_bytes)
        if not isinstance(doc, Document):
            out.problems.append(_problem(where, raw, doc))
            continue
        if doc.id in first:
            message = f"id: appears more than once (first at {first[doc.id]}); not sent"
            out.problems.append(Problem(where, doc.id, message))
            continue
        if (size := len(serialize(raw))) > budget:
            message = (
                f"{size} bytes as a job payload, over {limits.describe()} limit of "
                f"{limits.max_job_bytes} bytes per job; not sent"
            )
            out.problems.append(Problem(where, doc.id, message))
            continue
        first[doc.id] = where
        out.documents.append(raw)
    source_errors()
    return out


def _prepare_folder(source: FolderSource, out: Prepared) -> Prepared:
    """A folder's document files (sniffed now, read again when sent: a large folder is never
    held in memory), files over the byte limit as problems, and what was skipped as notes."""
    out.files.extend(source.files())
    out.read = len(out.files)
    for e in source.errors:
        doc_id, _, message = e.partition(": ")
        out.problems.append(Problem(doc_id, doc_id, message))
        out.read += 1
    out.notes = folder_notes(source)
    return out
