"""Enqueueing documents from application code: an async client and a small sync wrapper.

    async with PoolqClient("redis://localhost:6379/0") as client:
        job_ids = await client.enqueue("docs", documents, job_size=32)
        results = await client.wait(job_ids)

Jobs are serialized with msgpack, never pickle. Job ids are recorded in a time-ordered index
(trimmed to arq's result TTL, see :mod:`poolq.ingest.job_index`) so ``poolq status`` can count
queued, running, done and failed jobs. A Redis that is down is reported within seconds
(:class:`~poolq.worker.wire.connection.RedisUnavailableError`, one line naming host and port);
the URL's password never appears in a message or a repr.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from arq.connections import ArqRedis, create_pool
from redis.exceptions import AuthenticationError, RedisError

from poolq.ingest.job_index import (
    STATUSES,
    JobOutcome,
    index_jobs,
    index_status,
    outcomes,
    read_finished,
)
from poolq.ingest.sync_client import SyncPoolqClient
from poolq.sinks.search_types import Fusion, SearchError, SearchMode, SearchRequest, SearchResult
from poolq.worker.wire import constants
from poolq.worker.wire.connection import (
    CLIENT_CONNECT_DEADLINE_S,
    RedisUnavailableError,
    describe_address,
    redact_url,
    redis_settings,
)
from poolq.worker.wire.serialization import deserialize, serialize

__all__ = ["JobOutcome", "PoolqClient", "RedisUnavailableError", "SyncPoolqClient"]

# keys per SCAN step when looking for heartbeats and reindex progress among every key (arq's
# results included: the keyspace grows with the jobs of the last day)
SCAN_COUNT = 1000

# errors in the request itself (raised as SearchError); anything else is the worker's failure
_REQUEST_ERRORS = frozenset(
    {"SearchError", "ValueError", "SchemaMismatchError", "PoolingParamsError", "InputTooLongError"}
)


class PoolqClient:
    """``connect_timeout_s`` bounds connecting (a Redis that is down, or a host that does not
    answer, raises :class:`RedisUnavailableError` by then); ``job_index_ttl_s`` is how long
    :meth:`status` counts a job (match the worker's ``keep_result_s``); ``clock`` (unix
    seconds) is for tests."""

    def __init__(
        self,
        redis_url: str = constants.DEFAULT_REDIS_URL,
        *,
        connect_timeout_s: float = CLIENT_CONNECT_DEADLINE_S,
        job_index_ttl_s: float = constants.JOB_INDEX_TTL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.redis_url = redis_url
        self.connect_timeout_s = connect_timeout_s
        self.job_index_ttl_s = job_index_ttl_s
        self._clock = clock
        self._redis: ArqRedis | None = None

    def __repr__(self) -> str:
        state = "connected" if self._redis is not None else "not connected"
        return f"PoolqClient({redact_url(self.redis_url)!r}, {state})"

    async def connect(self) -> PoolqClient:
        if self._redis is None:
            where = f"{describe_address(self.redis_url)} ({redact_url(self.redis_url)})"
            try:
                self._redis = await asyncio.wait_for(
                    create_pool(
                        redis_settings(self.redis_url, client=True),
                        job_serializer=serialize,
                        job_deserializer=deserialize,
                        default_queue_name=constants.INGEST_QUEUE,
                    ),
                    self.connect_timeout_s,
                )
            except AuthenticationError as e:
                raise RedisUnavailableError(f"Redis at {where} refused the login: {e}") from None
            except TimeoutError:
                raise RedisUnavailableError(
                    f"Redis is not reachable at {where}: no answer within {self.connect_timeout_s:g}s"
                ) from None
            except (OSError, RedisError) as e:
                raise RedisUnavailableError(f"Redis is not reachable at {where}: {e}") from None
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
        await self._index(job_id)
        return job_id

    async def _index(self, job_id: str) -> None:
        await index_jobs(self.redis, [job_id], now=self._clock(), ttl_s=self.job_index_ttl_s)

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
        await self._index(job_id)
        return job_id

    async def reindex_progress(self, collection: str | None = None) -> list[dict[str, Any]]:
        """The latest progress record of each collection's reindex (or of ``collection``)."""
        if collection is not None:
            keys = [constants.REINDEX_PROGRESS_KEY.format(collection=collection)]
        else:
            keys = [
                k
                async for k in self.redis.scan_iter(
                    match=constants.REINDEX_PROGRESS_PATTERN, count=SCAN_COUNT
                )
            ]
        out = [deserialize(raw) for raw in await self._mget(keys) if raw]
        return sorted(out, key=lambda p: str(p.get("collection")))

    async def _mget(self, keys: Sequence[Any]) -> list[bytes | None]:
        return list(await self.redis.mget(keys)) if keys else []

    async def outcome(self, job_id: str) -> JobOutcome:
        (o,) = await outcomes(self.redis, [job_id], queue_name=constants.INGEST_QUEUE)
        return o

    async def finished(self, job_ids: Sequence[str]) -> dict[str, JobOutcome]:
        """The jobs among ``job_ids`` that are done or failed: one script call per thousand
        jobs, reading the tail of each result, not the documents arq keeps in it."""
        return await read_finished(self.redis, job_ids)

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

    async def status(
        self, job_ids: Sequence[str] | None = None, *, limit: int = constants.STATUS_LIST_LIMIT
    ) -> dict[str, Any]:
        """Counts of queued/running/done/failed jobs and their outcomes under ``jobs``: of the
        given jobs (all of them, in order), or of every job enqueued within the index's TTL
        (``jobs`` then lists the newest ``limit``). Batched reads: a few round trips per
        thousand jobs, and a job already seen finished costs nothing (see ``job_index``)."""
        if job_ids:
            listed = await outcomes(self.redis, list(job_ids), queue_name=constants.INGEST_QUEUE)
            counts = dict.fromkeys(STATUSES, 0)
            for o in listed:
                counts[o.status] = counts.get(o.status, 0) + 1
        else:
            counts, listed = await index_status(
                self.redis,
                queue_name=constants.INGEST_QUEUE,
                now=self._clock(),
                ttl_s=self.job_index_ttl_s,
                limit=limit,
            )
        return {
            "counts": counts,
            "jobs": listed,
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
                f"running on this Redis ({redact_url(self.redis_url)})?"
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
        keys = [
            k
            async for k in self.redis.scan_iter(match=constants.HEARTBEAT_PATTERN, count=SCAN_COUNT)
        ]
        out = [deserialize(raw) for raw in await self._mget(keys) if raw]
        return sorted(out, key=lambda w: str(w.get("worker_id")))
