"""poolq's public client API: enqueue documents, wait for them, search, from application code.

    from poolq import PoolqClient

    async with PoolqClient("redis://localhost:6379/0") as client:
        job_ids = await client.enqueue("docs", documents)
        outcomes = await client.wait(job_ids)

Importing this package loads only redis, arq and msgpack: never torch, transformers, tokenizers,
the engine or qdrant_client (the worker is ``pip install 'poolq[worker]'``). The repository's
folders install beneath this package: ``poolq.worker``, ``poolq.ingest``, ``poolq.sinks``,
``poolq.wire``. This
file is ``poolq/__init__.py`` in the source tree too: the package's top, in no role's folder.
"""

from poolq.ingest.client import JobOutcome, PoolqClient, SyncPoolqClient
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.heartbeat import Heartbeat
from poolq.wire.records.progress import JobProgressRecord
from poolq.wire.records.reindex import ReindexProgress, ReindexSkipped, ReindexSummary
from poolq.wire.records.results import IngestResult
from poolq.wire.search_types import Chunk, Hit, SearchError, SearchRequest, SearchResult

# what the client returns: JobOutcome (its result an IngestResult, ReindexSummary or
# ReindexSkipped; its code an ErrorCode), Heartbeat, JobProgressRecord, ReindexProgress,
# SearchResult
__all__ = [
    "Chunk",
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
