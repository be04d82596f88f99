"""poolq's public client API: enqueue documents, wait for them, search, from application code.

    from poolq import PoolqClient

    async with PoolqClient("redis://localhost:6379/0") as client:
        job_ids = await client.enqueue("docs", documents)
        outcomes = await client.wait(job_ids)

Importing the client loads only redis, arq and msgpack: never torch, transformers, tokenizers,
the engine or qdrant_client (the worker is ``pip install 'poolq[worker]'``). The names below are
loaded when first used, so a process that runs only the worker or ``poolq encode`` (whose
modules all sit beneath this package) does not import the client, redis and arq for nothing.
The repository's folders install beneath this package: ``poolq.worker``, ``poolq.ingest``,
``poolq.sinks``, ``poolq.wire``; this file is the package's top, in no role's folder.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from poolq.wire.version import __version__ as __version__  # the one source (wire/version.py)

if TYPE_CHECKING:
    from poolq.ingest.client import JobOutcome, PoolqClient, SyncPoolqClient
    from poolq.wire.records.codes import ErrorCode
    from poolq.wire.records.heartbeat import Heartbeat
    from poolq.wire.records.progress import JobProgressRecord
    from poolq.wire.records.reindex import ReindexProgress, ReindexSkipped, ReindexSummary
    from poolq.wire.records.results import IngestResult
    from poolq.wire.search_results import ChunkMatch, Hit, SearchError, SearchRequest, SearchResult

# what the client returns: JobOutcome (its result an IngestResult, ReindexSummary or
# ReindexSkipped; its code an ErrorCode), Heartbeat, JobProgressRecord, ReindexProgress,
# SearchResult
_MODULES = {
    "poolq.ingest.client": ("JobOutcome", "PoolqClient", "SyncPoolqClient"),
    "poolq.wire.records.codes": ("ErrorCode",),
    "poolq.wire.records.heartbeat": ("Heartbeat",),
    "poolq.wire.records.progress": ("JobProgressRecord",),
    "poolq.wire.records.reindex": ("ReindexProgress", "ReindexSkipped", "ReindexSummary"),
    "poolq.wire.records.results": ("IngestResult",),
    "poolq.wire.search_results": (
        "ChunkMatch",
        "Hit",
        "SearchError",
        "SearchRequest",
        "SearchResult",
    ),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}
__all__ = [
    "ChunkMatch",
    "ErrorCode",
    "Heartbeat",
    "Hit",
    "IngestResult",
    "JobOutcome",
    "JobProgressRecord",
    "PoolqClient",
    "ReindexProgress",
    "ReindexSkipped",
    "ReindexSummary",
    "SearchError",
    "SearchRequest",
    "SearchResult",
    "SyncPoolqClient",
]
assert sorted(__all__) == sorted(_WHERE)


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'poolq' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value  # once: later lookups find it here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
