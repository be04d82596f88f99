"""The blocking client for scripts (re-exported by :mod:`poolq.ingest.client`).

with SyncPoolqClient("redis://localhost:6379/0") as client:
    client.wait(client.enqueue("docs", documents))
    for hit in client.search("vector database", "docs"):
        print(hit.score, hit.doc_id)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from poolq.wire import constants

if TYPE_CHECKING:
    from poolq.ingest.client_reads import StatusReport
    from poolq.ingest.job_index import JobOutcome
    from poolq.wire.records.cancel import CancelRequest
    from poolq.wire.search_results import SearchResult


class SyncPoolqClient:
    """Blocking wrapper for scripts: each call runs the async client on a private loop. Use it
    in ``with`` (it closes on exit) or call :meth:`close`."""

    def __init__(self, redis_url: str = constants.DEFAULT_REDIS_URL, **kwargs: Any) -> None:
        """``kwargs``: those of :class:`PoolqClient`."""
        from poolq.ingest.client import PoolqClient  # (client.py re-exports this class)

        self._loop = asyncio.new_event_loop()
        self._client = PoolqClient(redis_url, **kwargs)
        try:
            self._loop.run_until_complete(self._client.connect())
        except BaseException:
            self._loop.close()
            raise

    def __repr__(self) -> str:
        return f"Sync{self._client!r}"

    def __enter__(self) -> SyncPoolqClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, coro: Any) -> Any:
        if self._loop.is_closed():
            coro.close()
            raise RuntimeError("client closed")
        return self._loop.run_until_complete(coro)

    def enqueue(
        self, collection: str, documents: Iterable[dict[str, Any]], **kwargs: Any
    ) -> list[str]:
        """See :meth:`PoolqClient.enqueue` (``job_size``, ``force``, ``priority``)."""
        return self._run(self._client.enqueue(collection, documents, **kwargs))

    def wait(self, job_ids: Sequence[str], **kwargs: Any) -> list[JobOutcome]:
        """See :meth:`PoolqClient.wait` (``timeout_s``, ``progress``, ...; rides out a Redis
        outage of up to the client's ``redis_outage_limit_s``)."""
        return self._run(self._client.wait(job_ids, **kwargs))

    def status(self, job_ids: Sequence[str] | None = None, **kwargs: Any) -> StatusReport:
        """See :meth:`PoolqClient.status`."""
        return self._run(self._client.status(job_ids, **kwargs))

    def reindex(self, source: str, collection: str, **kwargs: Any) -> str:
        """See :meth:`PoolqClient.reindex`."""
        return self._run(self._client.reindex(source, collection, **kwargs))

    def search(self, query: str, collection: str, **kwargs: Any) -> SearchResult:
        """See :meth:`PoolqClient.search` (documents by default; ``group_by=None``: chunks)."""
        return self._run(self._client.search(query, collection, **kwargs))

    def cancel(self, job_id: str) -> CancelRequest:
        """See :meth:`PoolqClient.cancel`."""
        return self._run(self._client.cancel(job_id))

    def close(self) -> None:
        """Close the connection (a second call does nothing)."""
        if self._loop.is_closed():
            return
        try:
            self._loop.run_until_complete(self._client.close())
        finally:
            self._loop.close()
