"""A reindex as it crosses Redis (``worker/app/jobs/reindex.py`` writes both, the client reads
them: ``poolq reindex --wait``, ``poolq status``, :meth:`PoolqClient.reindex_progress`):

* its result, the job's return value that arq stores: a :class:`ReindexSummary`, or a
  :class:`ReindexSkipped` when another reindex of the collection held the lock
  (:func:`reindex_result` tells them apart);
* its progress, a :class:`ReindexProgress` under ``REINDEX_PROGRESS_KEY``, rewritten as the
  reindex moves through its states (:data:`REINDEX_STATES`) and ending with the summary under
  ``result`` or the failure under ``error``/``code``.

Keyword-only dataclasses, so the fields keep the order the maps always had (``poolq status
--json`` prints them as they come)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.record import WireError, WireRecord, always_on_wire
from poolq.wire.records.results import DocumentErrorRecord

# what a reindex goes through, in order; it ends "done" or "failed"
REINDEX_STATES: Final = (
    "reading source",
    "parsing files",  # a folder's new and changed files
    "syncing",  # a bucket's prefix: listed, fetched, parsed and encoded a page at a time
    "parked",  # the store stayed down: the sync resumes from its checkpoint later
    "encoding",
    "building indexes",  # full rebuilds only, as is the next
    "switching alias",
    "done",
    "failed",
)
# the counts of a reindex plan (``ReindexPlan.counts()``), in the summary and the progress
PLAN_COUNTS: Final = ("new", "changed", "stale", "metadata_only", "unchanged", "removed")


@dataclass(frozen=True, kw_only=True)
class ReindexSummary(WireRecord):
    """``documents``: valid documents in the source; ``target``: the physical collection written
    (the alias itself when incremental); the plan's counts; ``switched_from``: the collection
    the alias pointed to before a full rebuild switched it (always on the wire: ``null`` for an
    incremental reindex or a first rebuild); ``dropped``: that collection, when the rebuild
    dropped it; ``points`` written by the pipeline, ``errors`` (refused documents and unreadable
    source entries), ``encoded_chunks``; ``engine_requests``, ``write_calls`` and
    ``points_written``: what the worker's engines and writer did meanwhile."""

    wire_name = "reindex summary"

    collection: str
    source: str
    full: bool
    documents: int
    target: str
    new: int
    changed: int
    stale: int
    metadata_only: int
    unchanged: int
    removed: int
    switched_from: str | None = always_on_wire()
    dropped: str | None = None
    points: int
    errors: list[DocumentErrorRecord] = field(default_factory=list)
    encoded_chunks: int
    engine_requests: int
    write_calls: int
    points_written: int
    seconds: float
    listed: int | None = None  # a bucket's prefix: objects listed, and those fetched
    fetched: int | None = None

    def counts(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in PLAN_COUNTS}


@dataclass(frozen=True, kw_only=True)
class ReindexSkipped(WireRecord):
    """A reindex that did not run: ``skipped`` says why (another one of ``collection`` runs)."""

    wire_name = "reindex skipped"

    collection: str
    skipped: str


@dataclass(frozen=True, kw_only=True)
class ReindexProgress(WireRecord):
    """``state``: one of :data:`REINDEX_STATES`; ``done`` of ``to_encode`` documents through
    the pipeline; the plan's counts once planned (absent before); ``updated_at``: when written
    (epoch seconds); ``result`` once done; ``error`` (``Type: message``) and its ``code`` once
    failed (a failed record without a code does not decode)."""

    wire_name = "reindex progress"

    collection: str
    source: str
    full: bool
    job_id: str
    state: str
    started_at: float
    done: int = 0
    to_encode: int = 0
    new: int | None = None
    changed: int | None = None
    stale: int | None = None
    metadata_only: int | None = None
    unchanged: int | None = None
    removed: int | None = None
    updated_at: float | None = None
    parsed: int = 0  # a folder's files parsed (new or changed ones), and their pages
    pages: int = 0
    listed: int = 0  # a bucket's prefix: objects listed and fetched so far
    fetched: int = 0
    result: ReindexSummary | None = None
    error: str | None = None
    code: ErrorCode | None = None

    def __post_init__(self) -> None:
        if self.state == "failed" and self.code is None:
            raise WireError(f"{self.wire_name}: code: missing (required when state is failed)")


def reindex_result(result: Any) -> ReindexSummary | ReindexSkipped:
    """A reindex job's stored result as its record (:class:`WireError` naming the field when it
    is neither)."""
    if isinstance(result, dict) and isinstance(result.get("skipped"), str):
        return ReindexSkipped.from_wire(result)
    return ReindexSummary.from_wire(result)


def read_reindex_progress(raw: bytes | None) -> ReindexProgress | None:
    """The progress record stored in ``raw`` (None: none, or not one a worker wrote)."""
    if not raw:
        return None
    try:
        return ReindexProgress.unpack(raw)
    except WireError:
        return None
