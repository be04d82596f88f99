"""Enqueueing documents from application code: an async client and a small sync wrapper.

    async with PoolqClient("redis://localhost:6379/0") as client:
        job_ids = await client.enqueue("docs", documents, job_size=32)
        results = await client.wait(job_ids)

Jobs are serialized with msgpack, never pickle, and planned to fit the limits of the live
workers (:mod:`poolq.wire.job_plan`) before any is enqueued; the reads (``wait``, ``status``,
``search``, ...) are :mod:`poolq.ingest.client_reads`. A Redis that is down is reported within
seconds (:class:`~poolq.wire.connection.RedisUnavailableError`, one line naming host and port);
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

from poolq.ingest import dead_letters, job_cancel
from poolq.ingest.client_reads import ClientReads, StatusReport
from poolq.ingest.job_index import JobOutcome
from poolq.ingest.job_progress import WaitProgress
from poolq.ingest.outage import RedisOutage, outage_limit_s
from poolq.ingest.priority import check_priority, job_priority, queue_placement
from poolq.ingest.sync_client import SyncPoolqClient
from poolq.ingest.workers_alive import NoWorkerError
from poolq.wire import constants
from poolq.wire.connection import (
    CLIENT_CONNECT_DEADLINE_S,
    RedisUnavailableError,
    describe_address,
    redact_url,
    redis_settings,
)
from poolq.wire.files import is_file_document
from poolq.wire.job_plan import Limits, check_files, plan_jobs
from poolq.wire.live_workers import live_workers
from poolq.wire.records.cancel import CancelRequest
from poolq.wire.records.dlq import DlqRetried
from poolq.wire.records.job_args import IngestArgs, ParseArgs, ReindexArgs
from poolq.wire.records.job_info import JobInfo, job_info_key
from poolq.wire.serialization import deserialize, serialize

__all__ = [
    "JobOutcome",
    "Limits",
    "NoWorkerError",
    "PoolqClient",
    "RedisUnavailableError",
    "StatusReport",
    "SyncPoolqClient",
    "WaitProgress",
]

LIMITS_CACHE_S = 10.0  # how long the live workers' limits are trusted
JOB_SIZES_KEPT = 100_000  # documents per job remembered for wait's progress


class PoolqClient(ClientReads):
    """``connect_timeout_s`` bounds connecting (a Redis that is down, or a host that does not
    answer, raises :class:`RedisUnavailableError` by then); once connected, :meth:`wait` and
    :meth:`status` ride out a Redis outage of up to ``redis_outage_limit_s`` (default: env
    ``POOLQ_REDIS_OUTAGE_LIMIT_S``, else 300; see :mod:`poolq.ingest.outage`);
    ``job_index_ttl_s`` is how long :meth:`status` counts a job (match the worker's
    ``keep_result_s``); ``clock`` (unix seconds) is for tests."""

    def __init__(
        self,
        redis_url: str = constants.DEFAULT_REDIS_URL,
        *,
        connect_timeout_s: float = CLIENT_CONNECT_DEADLINE_S,
        job_index_ttl_s: float = constants.JOB_INDEX_TTL_S,
        clock: Callable[[], float] = time.time,
        redis_outage_limit_s: float | None = None,
    ) -> None:
        self.redis_url = redis_url
        self.connect_timeout_s = connect_timeout_s
        self.redis_outage_limit_s = outage_limit_s(redis_outage_limit_s)
        self.job_index_ttl_s = job_index_ttl_s
        self._clock = clock
        self._redis: ArqRedis | None = None
        self._limits: tuple[float, Limits] | None = None
        self._job_sizes: dict[str, int] = {}

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
        self,
        collection: str,
        documents: Iterable[dict[str, Any]],
        *,
        job_size: int = 32,
        force: bool = False,
        limits: Limits | None = None,
        on_enqueued: Callable[[str, int], None] | None = None,
        priority: str = "auto",
    ) -> list[str]:
        """Split ``documents`` into jobs of at most ``job_size`` that fit the workers' limits
        (``limits``, default: :meth:`limits`) and enqueue them; returns the job ids.

        A document is ``{"id", "text", "metadata"?}``, or a file to parse: ``{"id", "bytes"}``
        (its content), ``{"id", "path"}`` (an absolute path the workers can read) or
        ``{"id", "uri"}`` (``s3://bucket/key``, ``gs://``, ``az://``, ``https://``, ``file://``:
        the workers fetch it with their own credentials, the client needs no cloud library;
        what hits cite is the URI), with ``"metadata"`` and ``"source"`` (what hits cite)
        optional. Files go to the parse stage
        (PDF, HTML, DOCX, PPTX, EPUB, Markdown, text: the type is sniffed from the bytes); no
        parsing library is needed here. A file over the workers' ``max_file_bytes`` is a
        ``ValueError`` naming it, before anything is enqueued.

        ``ValueError`` before anything is enqueued for a ``job_size`` over the limit of
        documents per job, a document too big for any job, or an unknown ``priority``.
        ``force``: re-encode and rewrite documents a worker would skip as unchanged.
        ``priority``: ``"interactive"`` jobs go ahead of every bulk job in the queue (and take
        the engines' interactive lane), ``"bulk"`` ones in enqueue order; ``"auto"`` is
        interactive when the call makes one job, else bulk (:mod:`poolq.ingest.priority`).
        ``on_enqueued(job_id, n_documents)`` is called after each job is enqueued."""
        check_priority(priority, "priority")
        docs = list(documents)
        limits = limits or await self.limits()
        files = [d for d in docs if is_file_document(d)]
        check_files(files, limits)
        texts = [d for d in docs if not is_file_document(d)] if files else docs
        plan = plan_jobs(collection, texts, job_size, limits) if texts else []
        file_plan = plan_jobs(collection, files, job_size, limits) if files else []
        lane = job_priority(priority, len(plan) + len(file_plan))
        ids: list[str] = []
        for batch, parse in [(b, False) for b in plan] + [(b, True) for b in file_plan]:
            job_id = await self._enqueue_one(
                collection, batch, force=force, priority=lane, parse=parse
            )
            ids.append(job_id)
            if on_enqueued is not None:
                on_enqueued(job_id, len(batch))
        return ids

    async def _enqueue_one(
        self,
        collection: str,
        docs: list[dict[str, Any]],
        *,
        force: bool = False,
        priority: str = "bulk",
        parse: bool = False,
    ) -> str:
        job_id = uuid.uuid4().hex
        if parse:  # files: to the parse queue, whose job hands the documents on (wire/files.py)
            args, kwargs = ParseArgs(collection, docs, force, priority).call()
            function, queue = constants.PARSE_JOB, constants.PARSE_QUEUE
        else:
            args, kwargs = IngestArgs(collection, docs, force, priority).call()
            function, queue = constants.INGEST_JOB, constants.INGEST_QUEUE
        job = await self.redis.enqueue_job(
            function,
            *args,
            _job_id=job_id,
            _queue_name=queue,
            **kwargs,
            **queue_placement(priority, time.time(), self.redis.expires_extra_ms),
        )
        if job is None:  # pragma: no cover - only when the id already exists
            raise RuntimeError(f"job {job_id} already exists")
        # what the dashboard lists and filters by, without the documents (records/job_info.py)
        info = JobInfo(function, collection, priority, len(docs), time.time())
        await self.redis.set(job_info_key(job_id), info.pack(), ex=constants.JOB_INDEX_TTL_S)
        if len(self._job_sizes) >= JOB_SIZES_KEPT:
            self._job_sizes.pop(next(iter(self._job_sizes)))
        self._job_sizes[job_id] = len(docs)
        return job_id

    def outage(self) -> RedisOutage:
        """A fresh tracker of a Redis outage for one wait or status (its limit:
        ``redis_outage_limit_s``)."""
        return RedisOutage(describe_address(self.redis_url), self.redis_outage_limit_s)

    async def limits(self) -> Limits:
        """The limits jobs must fit: the smallest each live worker reports, else the defaults
        (cached for a few seconds)."""
        now = time.monotonic()
        if self._limits is None or now - self._limits[0] > LIMITS_CACHE_S:
            self._limits = (now, Limits.from_heartbeats(await live_workers(self.redis)))
        return self._limits[1]

    async def reindex(
        self, source: str, collection: str, *, full: bool = False, keep_old: bool = False
    ) -> str:
        """Enqueue a reindex of ``collection`` from ``source`` (a JSONL file or a folder the
        worker can read; give an absolute path). Returns the job id; see :meth:`wait` and
        :meth:`reindex_progress`."""
        job_id = f"reindex-{uuid.uuid4().hex}"
        args, _ = ReindexArgs(source, collection, full, keep_old).call()
        job = await self.redis.enqueue_job(constants.REINDEX_JOB, *args, _job_id=job_id)
        if job is None:  # pragma: no cover - only when the id already exists
            raise RuntimeError(f"job {job_id} already exists")
        return job_id

    async def dlq_retry(self, job_ids: Sequence[str] | None = None) -> list[DlqRetried]:
        """Enqueue dead-lettered jobs again (same function and arguments, new job ids; all of
        them without ``job_ids``) and take them out of the list: one :class:`DlqRetried` (old
        id, new id) per job, in the list's order. ``KeyError`` naming the ids not in the list,
        before anything is enqueued."""
        retried = await dead_letters.retry(self.redis, job_ids)
        return [DlqRetried(old, new) for old, new in retried.items()]

    async def cancel(self, job_id: str) -> CancelRequest:
        """Cancel a job: a queued one is taken out of the queue and never runs (``state``
        ``cancelled``); a running one stops at its next batch boundary (``cancelling``), the
        points it wrote so far kept; its status is then ``cancelled``, and it is neither retried
        nor dead-lettered. ``finished``: it had ended already; ``not_found``: no such job
        (:mod:`poolq.ingest.job_cancel`)."""
        return await job_cancel.cancel(self.redis, job_id)

    async def dlq_drop(self, job_ids: Sequence[str] | None = None) -> list[str]:
        """Remove dead-lettered jobs from the list for good (all of them without ``job_ids``);
        their ids. ``KeyError`` naming the ids not in the list."""
        return await dead_letters.drop(self.redis, job_ids)
