"""The blocking client for scripts (re-exported by :mod:`poolq.ingest.client`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from poolq.worker.wire import constants

if TYPE_CHECKING:
    from poolq.ingest.job_index import JobOutcome
    from poolq.sinks.search_types import SearchResult


class SyncPoolqClient:
    """Blocking wrapper for scripts: each call runs the async client on a private loop."""

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

    def enqueue(
        self, collection: str, documents: Iterable[dict[str, Any]], *, job_size: int = 32
    ) -> list[str]:
        return self._loop.run_until_complete(
            self._client.enqueue(collection, documents, job_size=job_size)
        )

    def wait(self, job_ids: Sequence[str], *, timeout_s: float | None = None) -> list[JobOutcome]:
        return self._loop.run_until_complete(self._client.wait(job_ids, timeout_s=timeout_s))

    def status(self, job_ids: Sequence[str] | None = None, **kwargs: Any) -> dict[str, Any]:
        """See :meth:`PoolqClient.status`."""
        return self._loop.run_until_complete(self._client.status(job_ids, **kwargs))

    def reindex(self, source: str, collection: str, **kwargs: Any) -> str:
        """See :meth:`PoolqClient.reindex`."""
        return self._loop.run_until_complete(self._client.reindex(source, collection, **kwargs))

    def search(self, query: str, collection: str, **kwargs: Any) -> SearchResult:
        """See :meth:`PoolqClient.search`."""
        return self._loop.run_until_complete(self._client.search(query, collection, **kwargs))

    def close(self) -> None:
        self._loop.run_until_complete(self._client.close())
        self._loop.close()
