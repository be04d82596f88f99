"""Splitting documents into jobs a worker accepts: the one job splitter, used by the client
(:meth:`PoolqClient.enqueue`), by ``poolq enqueue`` for a folder's files (read only when their job
is sent) and by a parse job handing its documents on to the encode workers.

A worker refuses a job of more than ``max_documents_per_job`` documents or a payload over
``max_job_bytes``, and fails a document over ``max_document_bytes`` (dead letters, errors:
nothing a retry can fix). These limits are known before anything is enqueued: from the
heartbeats of the live workers (each reports its own under ``"limits"``; the smallest wins), else
the defaults in :mod:`poolq.wire.constants`; :func:`split_jobs` fills jobs to them in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from poolq.wire import constants
from poolq.wire.files import uri_problem
from poolq.wire.records.heartbeat import Heartbeat, WorkerLimits
from poolq.wire.serialization import serialize

# What an arq job adds around its documents: function name, collection, kwargs, try count,
# enqueue time, the list header. Measured below 100 bytes; kept generous.
JOB_ENVELOPE_BYTES = 512
T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """A worker's limits; ``source`` says where they come from (``"worker"``: live heartbeats,
    ``"defaults"``: no live worker reported any)."""

    max_documents_per_job: int = constants.MAX_DOCUMENTS_PER_JOB
    max_document_bytes: int = constants.MAX_DOCUMENT_BYTES
    max_job_bytes: int = constants.MAX_JOB_BYTES
    max_file_bytes: int = constants.MAX_FILE_BYTES
    source: str = "defaults"

    @classmethod
    def from_heartbeats(cls, heartbeats: Iterable[Heartbeat]) -> Limits:
        """The smallest of each limit among ``heartbeats`` (live workers)."""
        reported = [h.limits for h in heartbeats]
        if not reported:
            return cls()
        values: dict[str, int] = {}
        for name in WorkerLimits.field_names():
            found = [n for r in reported if (n := getattr(r, name)) > 0]
            values[name] = min(found) if found else getattr(cls, name)
        return cls(**values, source="worker")

    def job_budget(self, collection: str) -> int:
        """Bytes of documents one job to ``collection`` may carry."""
        return self.max_job_bytes - JOB_ENVELOPE_BYTES - len(collection.encode("utf-8"))

    def describe(self) -> str:
        return "the worker's" if self.source == "worker" else "the default"

    def check_job_size(self, job_size: int) -> None:
        if isinstance(job_size, bool) or not isinstance(job_size, int) or job_size < 1:
            raise ValueError(f"job_size must be an integer >= 1, got {job_size!r}")
        if job_size > self.max_documents_per_job:
            raise ValueError(
                f"job_size {job_size} is over {self.describe()} limit of "
                f"{self.max_documents_per_job} documents per job"
            )

    def document_problem(self, doc: Any) -> str | None:
        """Why a worker would refuse ``doc`` for its size, or None."""
        text = doc.get("text") if isinstance(doc, Mapping) else None
        if not isinstance(text, str):
            return None  # (the worker reports what is wrong with it)
        size = len(text.encode("utf-8", errors="surrogatepass"))
        if size > self.max_document_bytes:
            return (
                f"text is {size} bytes, over {self.describe()} limit of "
                f"{self.max_document_bytes} bytes per document"
            )
        return None


def _ref(doc: Any, position: int) -> str:
    doc_id = doc.get("id") if isinstance(doc, Mapping) else None
    return repr(doc_id) if isinstance(doc_id, str) and doc_id else f"#{position}"


def split_jobs(
    items: Sequence[T], sizes: Sequence[int], *, max_items: int, budget: int
) -> list[list[T]]:
    """``items`` in order, greedily in jobs of at most ``max_items`` whose ``sizes`` (bytes as
    a job payload) add up to at most ``budget``; an item over the budget goes alone (callers
    refuse such items first)."""
    jobs: list[list[T]] = []
    batch: list[T] = []
    used = 0
    for item, size in zip(items, sizes, strict=True):
        if batch and (len(batch) >= max_items or used + size > budget):
            jobs.append(batch)
            batch, used = [], 0
        batch.append(item)
        used += size
    if batch:
        jobs.append(batch)
    return jobs


def plan_jobs(
    collection: str, documents: Sequence[Any], job_size: int, limits: Limits
) -> list[list[Any]]:
    """``documents`` in order, in jobs of at most ``job_size`` documents whose payload fits
    ``max_job_bytes``. ``ValueError`` (nothing planned) for a ``job_size`` over the limit or a
    document that no job can carry."""
    limits.check_job_size(job_size)
    budget = limits.job_budget(collection)
    sizes = [len(serialize(doc)) for doc in documents]
    for position, (doc, size) in enumerate(zip(documents, sizes, strict=True)):
        if size > budget:
            raise ValueError(
                f"document {_ref(doc, position)} is {size} bytes as a job payload, over "
                f"{limits.describe()} limit of {limits.max_job_bytes} bytes per job"
            )
    return split_jobs(documents, sizes, max_items=job_size, budget=budget)


def check_files(files: Sequence[Any], limits: Limits) -> None:
    """``ValueError`` naming the first file sent by its bytes that is over ``max_file_bytes``,
    or given by a URI that names no document the workers can fetch."""
    for position, doc in enumerate(files):
        if isinstance(doc, Mapping) and "uri" in doc and (bad := uri_problem(doc["uri"])):
            raise ValueError(f"file {_ref(doc, position)}: uri: {bad}; nothing was enqueued")
        data = doc.get("bytes") if isinstance(doc, Mapping) else None
        if isinstance(data, bytes | bytearray) and len(data) > limits.max_file_bytes:
            raise ValueError(
                f"file {_ref(doc, position)} is {len(data)} bytes, over {limits.describe()} "
                f"limit of {limits.max_file_bytes} bytes per file; nothing was enqueued"
            )
