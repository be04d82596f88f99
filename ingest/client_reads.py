"""What a client reads back from Redis (part of :mod:`poolq.ingest.client`; ``PoolqClient``
takes these methods from :class:`ClientReads`): live workers, job progress and outcomes,
``wait`` and ``status`` (a :class:`StatusReport`), reindex progress, dead letters, and searches
sent to the workers. Writes (enqueueing ingest and reindex jobs, retrying or dropping dead
letters) stay in ``client.py``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arq.connections import ArqRedis

from poolq.ingest.job_index import (
    GIVEN_STATUSES,
    JobOutcome,
    ended,
    index_status,
    outcomes,
    read_finished,
    reindex_collections,
)
from poolq.ingest.job_progress import WaitProgress, read_progress, wait_jobs
from poolq.ingest.outage import RedisOutage, ride_out
from poolq.ingest.search_call import search_via_workers
from poolq.wire import constants
from poolq.wire.dead_letters import entries
from poolq.wire.live_workers import live_workers, worker_records
from poolq.wire.records.dead_letter import DeadLetter
from poolq.wire.records.heartbeat import Heartbeat
from poolq.wire.records.progress import JobProgressRecord
from poolq.wire.records.record import WireError
from poolq.wire.records.reindex import ReindexProgress, read_reindex_progress
from poolq.wire.search_results import (
    DEFAULT_GROUP_SIZE,
    Fusion,
    SearchMode,
    SearchRequest,
    SearchResult,
)


@dataclass(frozen=True)
class StatusReport:
    """What :meth:`ClientReads.status` found. ``counts``: jobs by status (``queued``,
    ``running``, ``done``, ``failed``, ``deferred``, ``not_found``, ``refused``); ``jobs``: the
    given jobs' outcomes (all of them, in order), or without job ids the running jobs and the
    newest finished ones; ``workers``: heartbeats, stopped ones included while their final
    heartbeat lasts; ``reindex``: each collection's latest reindex progress; ``workers_alive``:
    how many workers are; ``last_heartbeat_age_s``: seconds since a worker was last seen
    (None: never).

    :meth:`to_json` is the map ``poolq status --json`` prints (a contract: its keys and their
    order); :meth:`from_json` reads it back (a job's ``code`` is not in it)."""

    counts: dict[str, int]
    jobs: list[JobOutcome]
    workers: list[Heartbeat]
    reindex: list[ReindexProgress]
    workers_alive: int
    last_heartbeat_age_s: float | None

    def to_json(self, *, with_jobs: bool = True) -> dict[str, Any]:
        """The records as maps; ``with_jobs=False``: ``jobs`` is ``[]`` (what the command
        prints when no job ids were given)."""
        return {
            "jobs": [job_json(o) for o in self.jobs] if with_jobs else [],
            "counts": dict(self.counts),
            "workers": [w.to_wire() for w in self.workers],
            "reindex": [r.to_wire() for r in self.reindex],
            "workers_alive": self.workers_alive,
            "last_heartbeat_age_s": self.last_heartbeat_age_s,
        }

    @classmethod
    def from_json(cls, data: Any) -> StatusReport:
        """The report :meth:`to_json` gave; :class:`WireError` naming what does not match."""
        if not isinstance(data, dict):
            raise WireError(f"status: expected a map, got {type(data).__name__}")
        try:
            counts, age = data["counts"], data["last_heartbeat_age_s"]
            alive = data["workers_alive"]
            jobs, workers, reindex = data["jobs"], data["workers"], data["reindex"]
        except KeyError as e:
            raise WireError(f"status: {e.args[0]}: missing (a required field)") from None
        if not (isinstance(counts, dict) and all(isinstance(v, int) for v in counts.values())):
            raise WireError("status: counts: expected a map of integers")
        if isinstance(alive, bool) or not isinstance(alive, int):
            raise WireError(f"status: workers_alive: expected an integer, got {alive!r}")
        if age is not None and (isinstance(age, bool) or not isinstance(age, int | float)):
            raise WireError(f"status: last_heartbeat_age_s: expected a number, got {age!r}")
        if not all(isinstance(x, list) for x in (jobs, workers, reindex)):
            raise WireError("status: jobs, workers and reindex: expected lists")
        return cls(
            counts=dict(counts),
            jobs=[job_from_json(j) for j in jobs],
            workers=[Heartbeat.from_wire(w) for w in workers],
            reindex=[ReindexProgress.from_wire(r) for r in reindex],
            workers_alive=alive,
            last_heartbeat_age_s=None if age is None else float(age),
        )


def job_json(o: JobOutcome) -> dict[str, Any]:
    """A job's map in ``poolq status --json``: ``job_id``, ``status``, ``result`` (its record
    as a map, or null), ``error``."""
    result = o.result.to_wire() if o.result is not None else None
    return {"job_id": o.job_id, "status": o.status, "result": result, "error": o.error}


def job_from_json(data: Any) -> JobOutcome:
    """The outcome :func:`job_json` gave (without its ``code``)."""
    if not isinstance(data, dict) or not isinstance(data.get("job_id"), str):
        raise WireError("status: jobs: expected maps with a job_id")
    job_id, status, error = data["job_id"], data.get("status"), data.get("error")
    if not isinstance(status, str) or not (error is None or isinstance(error, str)):
        raise WireError(f"status: jobs: {job_id}: expected a status and an error text")
    if data.get("result") is not None:
        done = ended(job_id, data["result"])
        if done.status == "failed":  # a result that does not decode
            raise WireError(f"status: jobs: {job_id}: {done.error}")
        return JobOutcome(job_id, status, done.result, error)
    return JobOutcome(job_id, status, None, error)


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
        names = [collection] if collection is not None else await reindex_collections(self.redis)
        keys = [constants.REINDEX_PROGRESS_KEY.format(collection=c) for c in names]
        raws = await self.redis.mget(keys) if keys else []
        out = [r for r in map(read_reindex_progress, raws) if r is not None]
        return sorted(out, key=lambda p: p.collection)

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
    ) -> StatusReport:
        """A :class:`StatusReport` (its fields: see there) of the given jobs, or of every job:
        ``jobs`` then lists the running ones and the newest finished, ``limit`` in all, done and
        failed counted within the index's TTL as the workers recorded them (``job_index``: a
        few commands whatever the number of jobs).

        A Redis outage is waited out (``on_outage(seconds_down)`` after each failed try,
        ``on_outage(None)`` once Redis is back; :class:`RedisUnavailableError` after
        ``redis_outage_limit_s``)."""
        return await ride_out(lambda: self._status(job_ids, limit), self.outage(), on_outage)

    async def _status(self, job_ids: Sequence[str] | None, limit: int) -> StatusReport:
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
        return StatusReport(
            counts=counts,
            jobs=listed,
            workers=workers,
            reindex=await self.reindex_progress(),
            workers_alive=len(live),
            last_heartbeat_age_s=(
                None if last_seen is None else round(max(0.0, now - last_seen), 1)
            ),
        )

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
        reranker: bool = True,
        timeout_s: float = 30.0,
    ) -> SearchResult:
        """Search ``collection`` through a running worker (which encodes the query with the
        collection's profile, ahead of ingestion, and queries Qdrant). ``filters`` are
        ``key=value`` / ``key>=n`` expressions (see :mod:`poolq.wire.filters`).

        Hits are documents by default (``group_by="doc_id"``): each document's best chunk, with
        up to ``group_size - 1`` of its other matching chunks in ``hit.chunks``;
        ``group_by=None`` returns the chunks themselves, several of one document if they match.

        Where the collection's profile names a reranker (``[reranker]``), it re-scores the
        candidates and ``hit.score`` is its score (``result.reranker``, ``result.rerank_s``);
        ``reranker=False`` skips it.

        Raises :class:`SearchError` for a request the worker refuses (unknown collection, bad
        filter, mode the collection cannot run), :class:`NoWorkerError` (a ``TimeoutError``) at
        once when no worker is running on this Redis, and ``TimeoutError`` when a live worker
        does not answer within ``timeout_s``."""
        request = SearchRequest(
            collection, mode, limit, tuple(filters), score_threshold, fusion, candidates,
            group_by, group_size, reranker,
        )  # fmt: skip
        return await search_via_workers(self.redis, self.redis_url, query, request, timeout_s)

    async def dead_letters(self) -> list[DeadLetter]:
        """The dead-letter list: jobs that failed for good, oldest first (``poolq dlq list``);
        see :meth:`~poolq.ingest.client.PoolqClient.dlq_retry` and ``dlq_drop``."""
        return await entries(self.redis)

    async def workers(self) -> list[Heartbeat]:
        """The heartbeats of the workers seen lately (stopped ones while their final heartbeat
        lasts), by worker id: found from the workers' last-seen set, without a SCAN."""
        records, _ = await worker_records(self.redis, now=self._clock())
        return records
