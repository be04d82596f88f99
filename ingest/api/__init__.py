"""poolq's public client API: enqueue documents, wait for them, search, from application code.

    from poolq import PoolqClient

    async with PoolqClient("redis://localhost:6379/0") as client:
        job_ids = await client.enqueue("docs", documents)
        outcomes = await client.wait(job_ids)

Importing this package loads only redis, arq and msgpack: never torch, transformers, tokenizers,
the engine or qdrant_client (the worker is ``pip install 'poolq[worker]'``). The repository's
folders install beneath this package: ``poolq.worker``, ``poolq.ingest``, ``poolq.sinks``,
``poolq.wire``. This
file is ``ingest/api/__init__.py`` in the source tree, installed as ``poolq/__init__.py``.
"""

from poolq.ingest.client import JobOutcome, PoolqClient, SyncPoolqClient
from poolq.wire.search_types import Chunk, Hit, SearchError, SearchRequest, SearchResult

__all__ = [
    "Chunk",
    "Hit",
    "JobOutcome",
    "PoolqClient",
    "SearchError",
    "SearchRequest",
    "SearchResult",
    "SyncPoolqClient",
]
