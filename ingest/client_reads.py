"""What a client reads back from Redis (part of :mod:`poolq.ingest.client`; ``PoolqClient``
takes these methods from :class:`ClientReads`): live workers, job progress and outcomes,
``wait`` and ``status``, reindex progress, and searches sent to the workers. Writes (enqueueing
ingest and reindex jobs) stay in ``client.py``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from arq.connections import ArqRedis

from poolq.ingest.job_index import GIVEN_STATUSES, JobOutcome, index_status, outcomes, read_finished
from poolq.ingest.job_progress import WaitProgress, read_progress, wait_jobs
from poolq.ingest.outage import RedisOutage, ride_out
from poolq.ingest.search_call import search_via_workers
from poolq.ingest.workers_alive import live_workers
from poolq.wire import constants
from poolq.wire.records.heartbeat import Heartbeat
from poolq.wire.records.progress import JobProgressRecord
from poolq.wire.records.reindex import ReindexProgress, read_reindex_progress
from poolq.wire.search_types import (
    DEFAULT_GROUP_SIZE,
    Fusion,
    SearchMode,
    SearchRequest,
    SearchResult,
)


class ClientReads:
    """The reading half of :class:`~poolq.ingest.client.PoolqClient`, which provides the
    connection (``redis``), ``redis_url``, the clock, the job index's TTL and the outage
    policy these use."""

    redis_url: str
    job_index_ttl_s: float
    _clock: Callable[[], float]
    _job_sizes: dict[str, int]  # job id -> its documents, for wait's progress

    @property
    def redis(self) -> ArqRedis:
        raise NotImplementedError

    def outage(self) -> RedisOutage:
        raise NotImplementedError

    async def live_workers(self) -> list[Heartbeat]:
        """Heartbeats of the workers alive on this Redis (not expired, not stopped)."""
        return await live_workers(self.redis)

    async def progress(self, job_ids: Sequence[str]) -> dict[str, JobProgressRecord]:
        """job id -> its progress record (``documents``, ``done``, ``chunks``, ``points``,
        ``errors``, ``skipped``) for the jobs a worker has started (kept an hour)."""
        return await read_progress(self.redis, job_ids)

    async def reindex_progress(self, collection: str | None = None) -> list[ReindexProgress]:
        """The latest progress record of each collection's reindex (or of ``collection``): the
        collections workers listed when a reindex started or was scheduled (no SCAN), by name;
        a value no worker wrote is left out."""
        from poolq.ingest.job_index import reindex_collections

        names = [collection] if collection is not None else await reindex_collections(self.redis)
        keys = [constants.REINDEX_PROGRESS_KEY.format(collection=c) for c in names]
        out = [r for r in map(read_reindex_progress, await self._mget(keys)) if r is not None]
        return sorted(out, key=lambda p: p.collection)

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
        on_progress: Callable[[WaitProgress], None] | None = None,
    ) -> list[JobOutcome]:
        """Wait until every job is done or failed; ``progress`` is called once per finished job,
        ``on_progress`` after every look with a :class:`WaitProgress` (documents done, chunks,
        points, errors, skipped so far, from the workers' progress records, how many
        workers are alive, looked at every 2 s, and ``redis_down_s`` while Redis is not
        reachable). ``TimeoutError`` after ``timeout_s``, saying when no worker is running.
        A Redis outage is waited out (see :mod:`poolq.ingest.outage`): after
        ``redis_outage_limit_s`` of it, :class:`RedisUnavailableError`.

        Each poll is a few Redis round trips; the interval grows from ``poll_s`` to
        ``max_poll_s`` while nothing finishes, so waiting on many jobs costs next to nothing.
        """
        return await wait_jobs(
            self,
            job_ids,
            timeout_s=timeout_s,
            poll_s=poll_s,
            max_poll_s=max_poll_s,
            progress=progress,
            on_progress=on_progress,
        )

    async def status(
        self,
        job_ids: Sequence[str] | None = None,
        *,
        limit: int = constants.STATUS_LIST_LIMIT,
        on_outage: Callable[[float | None], None] | None = None,
    ) -> dict[str, Any]:
        """Counts of queued/running/done/failed jobs and their outcomes under ``jobs``: of the
        given jobs (all of them, in order), or of every job (``jobs`` then lists the running
        ones and the newest finished, ``limit`` in all), done and failed counted within the
        index's TTL as the workers recorded them (see ``job_index``: a few commands whatever
        the number of jobs). Also ``workers`` (heartbeats, stopped ones included while their
        final heartbeat lasts), ``workers_alive`` (how many are), ``last_heartbeat_age_s``
        (seconds since a worker was last seen; None: never) and ``reindex`` progress. The
        values are records: :class:`JobOutcome` under ``jobs``,
        :class:`~poolq.wire.records.heartbeat.Heartbeat` under ``workers``,
        :class:`~poolq.wire.records.reindex.ReindexProgress` under ``reindex``.

        A Redis outage is waited out (``on_outage(seconds_down)`` after each failed try,
        ``on_outage(None)`` once Redis is back; :class:`RedisUnavailableError` after
        ``redis_outage_limit_s``)."""
        return await ride_out(lambda: self._status(job_ids, limit), self.outage(), on_outage)

    async def _status(self, job_ids: Sequence[str] | None, limit: int) -> dict[str, Any]:
        from poolq.ingest.job_index import worker_records

        now = self._clock()
        workers, last_seen = await worker_records(self.redis, now=now)
        live = [w.worker_id for w in workers if w.alive]
        if job_ids:
            listed = await outcomes(self.redis, list(job_ids), queue_name=constants.INGEST_QUEUE)
            counts = dict.fromkeys(GIVEN_STATUSES, 0)
            for o in listed:
                counts[o.status] = counts.get(o.status, 0) + 1
        else:
            counts, listed = await index_status(
                self.redis,
                queue_name=constants.INGEST_QUEUE,
                now=now,
                ttl_s=self.job_index_ttl_s,
                limit=limit,
                live=live,
            )
        return {
            "counts": counts,
            "jobs": listed,
            "workers": workers,
            "reindex": await self.reindex_progress(),
            "workers_alive": len(live),
            "last_heartbeat_age_s": (
                None if last_seen is None else round(max(0.0, now - last_seen), 1)
            ),
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
        group_by: str | None = "doc_id",
        group_size: int = DEFAULT_GROUP_SIZE,
        timeout_s: float = 30.0,
    ) -> SearchResult:
        """Search ``collection`` through a running worker (which encodes the query with the
        collection's profile, ahead of ingestion, and queries Qdrant). ``filters`` are
        ``key=value`` / ``key>=n`` expressions (see :func:`sinks.search.parse_filters`).

        Hits are documents by default (``group_by="doc_id"``): each document's best chunk, with
        up to ``group_size - 1`` of its other matching chunks in ``hit.chunks``;
        ``group_by=None`` returns the chunks themselves, several of one document if they match.

        Raises :class:`SearchError` for a request the worker refuses (unknown collection, bad
        filter, mode the collection cannot run), :class:`NoWorkerError` (a ``TimeoutError``) at
        once when no worker is running on this Redis, and ``TimeoutError`` when a live worker
        does not answer within ``timeout_s``."""
        request = SearchRequest(
            collection, mode, limit, tuple(filters), score_threshold, fusion, candidates,
            group_by, group_size,
        )  # fmt: skip
        return await search_via_workers(self.redis, self.redis_url, query, request, timeout_s)

    async def workers(self) -> list[Heartbeat]:
        """The heartbeats of the workers seen lately (stopped ones while their final heartbeat
        lasts), by worker id: found from the workers' last-seen set, without a SCAN."""
        from poolq.ingest.job_index import worker_records

        records, _ = await worker_records(self.redis, now=self._clock())
        return records
