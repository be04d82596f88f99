"""The arguments of the arq jobs, as clients enqueue them and the job functions receive them.

The job functions' signatures are the contract (``ingest(ctx, collection, documents,
force=False, priority="bulk")``, ``reindex(ctx, source, collection, full=False,
keep_old=False)``): a client builds the record and enqueues :meth:`call`; the job function
builds it back from its arguments with :meth:`checked`, which refuses a bad argument with a
one-line error naming it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from poolq.wire import constants
from poolq.wire.records.record import WireRecord


def _non_empty(name: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name}: expected a non-empty string, got {value!r}")


def _flag(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name}: expected true or false, got {value!r}")


@dataclass(frozen=True)
class IngestArgs(WireRecord):
    wire_name = "ingest job arguments"

    collection: str
    documents: list[Any]
    force: bool = False
    priority: str = "bulk"

    @classmethod
    def checked(
        cls, collection: Any, documents: Any, force: Any = False, priority: Any = "bulk"
    ) -> IngestArgs:
        _non_empty("collection", collection)
        if not isinstance(documents, list):
            raise ValueError(f"documents: expected a list, got {type(documents).__name__}")
        _flag("force", force)
        if priority not in constants.PRIORITIES:
            raise ValueError(
                f"priority: expected one of {list(constants.PRIORITIES)}, got {priority!r}"
            )
        return cls(collection, documents, force, priority)

    def call(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Positional and keyword arguments of ``enqueue_job(INGEST_JOB, ...)``."""
        return (self.collection, self.documents), {"force": self.force, "priority": self.priority}


@dataclass(frozen=True)
class ParseArgs(WireRecord):
    """``parse(ctx, collection, files, force=False, priority="bulk")``: ``files`` are file
    documents (``wire/files.py``), checked one by one by the job."""

    wire_name = "parse job arguments"

    collection: str
    files: list[Any]
    force: bool = False
    priority: str = "bulk"

    @classmethod
    def checked(
        cls, collection: Any, files: Any, force: Any = False, priority: Any = "bulk"
    ) -> ParseArgs:
        ingest = IngestArgs.checked(collection, files, force, priority)
        return cls(ingest.collection, ingest.documents, ingest.force, ingest.priority)

    def call(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Positional and keyword arguments of ``enqueue_job(PARSE_JOB, ...)``."""
        return (self.collection, self.files), {"force": self.force, "priority": self.priority}


@dataclass(frozen=True)
class ReindexArgs(WireRecord):
    wire_name = "reindex job arguments"

    source: str
    collection: str
    full: bool = False
    keep_old: bool = False

    @classmethod
    def checked(
        cls, source: Any, collection: Any, full: Any = False, keep_old: Any = False
    ) -> ReindexArgs:
        _non_empty("source", source)
        _non_empty("collection", collection)
        _flag("full", full)
        _flag("keep_old", keep_old)
        return cls(source, collection, full, keep_old)

    def call(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Arguments of ``enqueue_job(REINDEX_JOB, ...)``: all positional, as clients always
        sent them."""
        return (self.source, self.collection, self.full, self.keep_old), {}
