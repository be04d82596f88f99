"""Enqueueing documents from application code: an async client and a small sync wrapper.

    async with PoolqClient("redis://localhost:6379/0") as client:
        job_ids = await client.enqueue("docs", documents, job_size=32)
        results = await client.wait(job_ids)

Jobs are serialized with msgpack, never pickle. Job ids are recorded in a Redis set so
``poolq status`` can count queued, running, done and failed jobs.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from arq.connections import ArqRedis, create_pool
from arq.constants import result_key_prefix
from arq.jobs import Job, JobStatus, deserialize_result

from poolq.sinks.search_types import Fusion, SearchError, SearchMode, SearchRequest, SearchResult
from poolq.worker.wire import constants
from poolq.worker.wire.connection import redis_settings
from poolq.worker.wire.serialization import deserialize, error_info, serialize

# errors in the request itself (raised as SearchError); anything else is the worker's failure
_REQUEST_ERRORS = frozenset(
    {"SearchError", "ValueError", "SchemaMismatchError", "PoolingParamsError", "InputTooLongError"}
)


@dataclass(frozen=True)
class JobOutcome:
    job_id: str
    status: str  # queued | deferred | running | done | failed | not_found
    result: dict[str, Any] | None = None
    error: str | None = None


class PoolqClient:
    def __init__(self, redis_url: str = "redis://localhost:6379/0") -> None:
        self.redis_url = redis_url
        self._redis: ArqRedis | None = None

    async def connect(self) -> PoolqClient:
        if self._redis is None:
            self._redis = await create_pool(
                redis_settings(self.redis_url),
                job_serializer=serialize,
                job_deserializer=deserialize,
                default_queue_name=constants.INGEST_QUEUE,
            )
        return self

    async def close(self) -> None:
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    async def __aenter__(self) -> PoolqClient:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def redis(self) -> ArqRedis:
        if self._redis is None:
            raise RuntimeError(
                "client not connected: use 'async with PoolqClient(...)' or 'await client.connect()'"
            )
        return self._redis

    async def enqueue(
        self, collection: str, documents: Iterable[dict[str, Any]], *, job_size: int = 32
    ) -> list[str]:
        """Split ``documents`` into jobs of ``job_size`` and enqueue them; returns the job ids."""
        if job_size < 1:
            raise ValueError(f"job_size must be >= 1, got {job_size}")
        ids: list[str] = []
        batch: list[dict[str, Any]] = []
        for doc in documents:
            batch.append(doc)
            if len(batch) >= job_size:
                ids.append(await self._enqueue_one(collection, batch))
                batch = []
        if batch:
            ids.append(await self._enqueue_one(collection, batch))
        return ids

    async def _enqueue_one(self, collection: str, docs: list[dict[str, Any]]) -> str:
        job_id = uuid.uuid4().hex
        job = await self.redis.enqueue_job(constants.INGEST_JOB, collection, docs, _job_id=job_id)
        if job is None:  # pragma: no cover - only when the id already exists
            raise RuntimeError(f"job {job_id} already exists")
        await self.redis.sadd(constants.JOB_INDEX_KEY, job_id)  # type: ignore[misc]
        return job_id

    async def reindex(
        self, source: str, collection: str, *, full: bool = False, keep_old: bool = False
    ) -> str:
        """Enqueue a reindex of ``collection`` from ``source`` (a JSONL file or a folder the
        worker can read; give an absolute path). Returns the job id; see :meth:`wait` and
        :meth:`reindex_progress`."""
        job_id = f"reindex-{uuid.uuid4().hex}"
        job = await self.redis.enqueue_job(
            constants.REINDEX_JOB, source, collection, full, keep_old, _job_id=job_id
        )
        if job is None:  # pragma: no cover - only when the id already exists
            raise RuntimeError(f"job {job_id} already exists")
        await self.redis.sadd(constants.JOB_INDEX_KEY, job_id)  # type: ignore[misc]
        return job_id

    async def reindex_progress(self, collection: str | None = None) -> list[dict[str, Any]]:
        """The latest progress record of each collection's reindex (or of ``collection``)."""
        if collection is not None:
            keys = [constants.REINDEX_PROGRESS_KEY.format(collection=collection)]
        else:
            keys = [k async for k in self.redis.scan_iter(match=constants.REINDEX_PROGRESS_PATTERN)]
        out = []
        for key in keys:
            raw = await self.redis.get(key)
            if raw:
                out.append(deserialize(raw))
        return sorted(out, key=lambda p: str(p.get("collection")))

    def _job(self, job_id: str) -> Job:
        return Job(
            job_id, self.redis, _queue_name=constants.INGEST_QUEUE, _deserializer=deserialize
        )

    async def outcome(self, job_id: str) -> JobOutcome:
        job = self._job(job_id)
        status = await job.status()
        if status == JobStatus.complete:
            info = await job.result_info()
            if info is None:  # pragma: no cover - expired between the two calls
                return JobOutcome(job_id, "not_found")
            if info.success:
                return JobOutcome(job_id, "done", info.result)
            return JobOutcome(job_id, "failed", None, error_info(info.result) or str(info.result))
        mapping = {
            JobStatus.queued: "queued",
            JobStatus.deferred: "deferred",
            JobStatus.in_progress: "running",
            JobStatus.not_found: "not_found",
        }
        return JobOutcome(job_id, mapping.get(status, str(status)))

    async def finished(self, job_ids: Sequence[str]) -> dict[str, JobOutcome]:
        """The jobs among ``job_ids`` that are done or failed: one MGET of their result keys."""
        if not job_ids:
            return {}
        raws = await self.redis.mget([result_key_prefix + j for j in job_ids])
        out: dict[str, JobOutcome] = {}
        for job_id, raw in zip(job_ids, raws, strict=True):
            if raw is None:
                continue
            info = deserialize_result(raw, deserializer=deserialize)
            if info.success:
                out[job_id] = JobOutcome(job_id, "done", info.result)
            else:
                out[job_id] = JobOutcome(
                    job_id, "failed", None, error_info(info.result) or str(info.result)
                )
        return out

    async def wait(
        self,
        job_ids: Sequence[str],
        *,
        timeout_s: float | None = None,
        poll_s: float = 0.1,
        max_poll_s: float = 0.5,
        progress: Callable[[JobOutcome], None] | None = None,
    ) -> list[JobOutcome]:
        """Wait until every job is done or failed; ``progress`` is called once per finished job.

        Each poll is one Redis round trip; the interval grows from ``poll_s`` to ``max_poll_s``
        while nothing finishes, so waiting on many jobs costs the worker's Redis next to nothing.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        pending = list(dict.fromkeys(job_ids))
        finished: dict[str, JobOutcome] = {}
        interval = poll_s
        while pending:
            done = await self.finished(pending)
            for job_id, o in done.items():
                finished[job_id] = o
                if progress is not None:
                    progress(o)
            pending = [j for j in pending if j not in done]
            if not pending:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(
                    f"{len(pending)} of {len(job_ids)} jobs not finished after {timeout_s}s"
                )
            interval = poll_s if done else min(max_poll_s, interval * 1.5)
            await asyncio.sleep(interval)
        return [finished[j] for j in job_ids]

    async def status(self, job_ids: Sequence[str] | None = None) -> dict[str, Any]:
        """Counts of queued/running/done/failed jobs (all known jobs, or the given ones)."""
        members = await self.redis.smembers(constants.JOB_INDEX_KEY)  # type: ignore[misc]
        ids = list(job_ids) if job_ids else [x.decode() for x in members]
        outcomes = await asyncio.gather(*(self.outcome(j) for j in ids))
        counts = {"queued": 0, "running": 0, "done": 0, "failed": 0, "not_found": 0, "deferred": 0}
        for o in outcomes:
            counts[o.status] = counts.get(o.status, 0) + 1
        return {
            "counts": counts,
            "jobs": outcomes,
            "workers": await self.workers(),
            "reindex": await self.reindex_progress(),
        }

    async def search(
        self,
        query: str,
        collection: str,
        *,
        mode: SearchMode | None = None,
        limit: int = 10,
        filters: Sequence[str] = (),
        score_threshold: float | None = None,
        fusion: Fusion = "rrf",
        candidates: int | None = None,
        timeout_s: float = 30.0,
    ) -> SearchResult:
        """Search ``collection`` through a running worker (which encodes the query with the
        collection's profile, ahead of ingestion, and queries Qdrant). ``filters`` are
        ``key=value`` / ``key>=n`` expressions (see :func:`sinks.search.parse_filters`).

        Raises :class:`SearchError` for a request the worker refuses (unknown collection, bad
        filter, mode the collection cannot run) and ``TimeoutError`` when no worker answers."""
        request = SearchRequest(
            collection, mode, limit, tuple(filters), score_threshold, fusion, candidates
        )
        if not isinstance(query, str) or not query.strip():
            raise SearchError(f"query: expected a non-empty string, got {query!r}")
        rid = uuid.uuid4().hex
        reply_to = constants.SEARCH_REPLY_PREFIX + rid
        msg = {
            "id": rid,
            "query": query,
            "request": request.to_dict(),
            "reply_to": reply_to,
            "deadline": time.time() + timeout_s,
        }
        raw = serialize(msg)
        await self.redis.rpush(constants.SEARCH_QUEUE, raw)  # type: ignore[misc]
        item = await self.redis.blpop([reply_to], timeout=timeout_s)  # type: ignore[misc,arg-type]
        if item is None:
            await self.redis.lrem(constants.SEARCH_QUEUE, 1, raw)  # type: ignore[misc,arg-type]
            raise TimeoutError(
                f"no worker answered the search within {timeout_s}s: is a `poolq worker` "
                f"running on this Redis ({self.redis_url})?"
            )
        reply = deserialize(item[1])
        if "error" in reply:
            err = reply["error"]
            if err.get("type") in _REQUEST_ERRORS:
                raise SearchError(err.get("message", "search refused"))
            raise RuntimeError(
                f"search failed in the worker: {err.get('type')}: {err.get('message')}"
            )
        return SearchResult.from_dict(reply["result"])

    async def workers(self) -> list[dict[str, Any]]:
        out = []
        async for key in self.redis.scan_iter(match=constants.HEARTBEAT_PATTERN):
            raw = await self.redis.get(key)
            if raw:
                out.append(deserialize(raw))
        return sorted(out, key=lambda w: str(w.get("worker_id")))


class SyncPoolqClient:
    """Blocking wrapper for scripts: each call runs the async client on a private loop."""

    def __init__(self, redis_url: str = "redis://localhost:6379/0") -> None:
        self._loop = asyncio.new_event_loop()
        self._client = PoolqClient(redis_url)
        self._loop.run_until_complete(self._client.connect())

    def enqueue(
        self, collection: str, documents: Iterable[dict[str, Any]], *, job_size: int = 32
    ) -> list[str]:
        return self._loop.run_until_complete(
            self._client.enqueue(collection, documents, job_size=job_size)
        )

    def wait(self, job_ids: Sequence[str], *, timeout_s: float | None = None) -> list[JobOutcome]:
        return self._loop.run_until_complete(self._client.wait(job_ids, timeout_s=timeout_s))

    def status(self, job_ids: Sequence[str] | None = None) -> dict[str, Any]:
        return self._loop.run_until_complete(self._client.status(job_ids))

    def reindex(self, source: str, collection: str, **kwargs: Any) -> str:
        """See :meth:`PoolqClient.reindex`."""
        return self._loop.run_until_complete(self._client.reindex(source, collection, **kwargs))

    def search(self, query: str, collection: str, **kwargs: Any) -> SearchResult:
        """See :meth:`PoolqClient.search`."""
        return self._loop.run_until_complete(self._client.search(query, collection, **kwargs))

    def close(self) -> None:
        self._loop.run_until_complete(self._client.close())
        self._loop.close()
