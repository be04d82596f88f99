"""Planning a reindex of a collection from its source: which documents are new, changed, stale,
metadata-only, unchanged or removed (the job that carries it out is
``worker/app/jobs/reindex.py``).

Incremental (the default): the collection's inventory (one record per document: text hash,
metadata hash, profile version, chunk count) is compared with the source:

* unchanged text, metadata and profile version: nothing at all (no model work, no writes);
* only the metadata changed: the payloads are updated in place (no model work);
* new documents, changed text, or points written by another profile version ("stale"):
  chunked, encoded and written; chunks beyond the new count are deleted;
* documents gone from the source: their points are deleted (by id, from the chunk count).

Full rebuild (``full=True``, for a model or profile change): every document is written into a
new physical collection, then the alias is switched to it in one atomic call, so searches see
the old collection or the complete new one, never a half-built one. The previous collection is
dropped after the switch unless ``keep_old``.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from poolq.sinks.inventory import StoredDocument
from poolq.wire.documents import Document, DocumentError, validate_documents
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.job_args import ReindexArgs
from poolq.wire.sources import FolderFile, FolderSource, Source, open_source
from poolq.worker.parse.file_reader import uri_allowed

log = logging.getLogger("poolq.reindex")
BATCH_DOCUMENTS = 32  # documents per pipeline batch
BATCHES_IN_FLIGHT = 4  # batches encoding at once: keeps the engine's batches full
PROGRESS_EVERY_S = 0.5


# a reindex's options are its job's arguments (one definition: records/job_args.py)
ReindexOptions = ReindexArgs


@dataclass
class ReindexPlan:
    new: list[Document] = field(default_factory=list)
    changed: list[Document] = field(default_factory=list)  # text changed
    stale: list[Document] = field(default_factory=list)  # same text, other profile version
    metadata_only: list[Document] = field(default_factory=list)
    unchanged: int = 0
    removed: list[StoredDocument] = field(default_factory=list)

    @property
    def to_encode(self) -> list[Document]:
        return self.new + self.changed + self.stale

    def counts(self) -> dict[str, int]:
        return {
            "new": len(self.new),
            "changed": len(self.changed),
            "stale": len(self.stale),
            "metadata_only": len(self.metadata_only),
            "unchanged": self.unchanged,
            "removed": len(self.removed),
        }


def plan_reindex(
    docs: Sequence[Document],
    stored: Mapping[str, StoredDocument],
    version: str,
    present: Collection[str] = (),
) -> ReindexPlan:
    """What to do for each document (see the module docstring). ``present``: ids of files of
    the source found unchanged by their bytes (``files.py``): unchanged, and not removed."""
    plan = ReindexPlan(unchanged=len(present))
    for doc in docs:
        have = stored.get(doc.id)
        if have is None:
            plan.new.append(doc)
        elif have.doc_hash != doc.content_hash:
            plan.changed.append(doc)
        elif have.profile_version != version:
            plan.stale.append(doc)
        elif have.meta_hash != doc.metadata_hash:
            plan.metadata_only.append(doc)
        else:
            plan.unchanged += 1
    in_source = {d.id for d in docs} | set(present)
    plan.removed = [s for doc_id, s in stored.items() if doc_id not in in_source]
    return plan


class SourceNotAllowedError(ValueError):
    code = ErrorCode.FORBIDDEN


def check_source_allowed(source: str, roots: Sequence[Path]) -> None:
    """Anyone who can write to Redis can enqueue a reindex: the worker only reads sources
    under its allowed roots (``source_roots``, plus the sources its own config schedules:
    ``parse/file_reader.allowed``); with none, no folder or file at all."""
    path = Path(source).resolve()
    if any(path.is_relative_to(r) for r in roots):
        return
    where = f"outside the worker's source roots {[str(r) for r in roots]}" if roots else (
        "refused: this worker has no source_roots")  # fmt: skip
    raise SourceNotAllowedError(
        f"source {source!r} is {where}; set source_roots (in its config, POOLQ_SOURCE_ROOTS "
        "separated by ':', or --source-roots) to allow it, or schedule it in [[reindex]]"
    )


def check_uri_allowed(source: str, uris: Sequence[str]) -> None:
    """A bucket's prefix is read only when the worker allows it: under a URI of its
    ``source_uris``, or scheduled by its own config (``parse/file_reader.allowed``)."""
    if uri_allowed(source, uris):
        return
    raise SourceNotAllowedError(
        f"source {source!r} is not among the worker's allowed URIs {list(uris)}; set "
        "source_uris (in its config, or POOLQ_SOURCE_URIS separated by spaces or commas) to "
        "allow it, or schedule it in [[reindex]]"
    )


def read_source(
    source: Source | str | Path, max_bytes: int
) -> tuple[list[Document], list[DocumentError], list[str], list[FolderFile]]:
    """Valid documents, invalid ones (with id and field), unreadable entries, and the document
    files of a folder (parsed by the job, unless unchanged: ``files.py``)."""
    src = open_source(source) if isinstance(source, str | Path) else source
    if isinstance(src, FolderSource):
        files = list(src.files())
        return [], [], list(src.errors), files
    raw = list(src.documents())
    docs, errors = validate_documents(raw, max_bytes=max_bytes)
    return docs, errors, list(getattr(src, "errors", [])), []
