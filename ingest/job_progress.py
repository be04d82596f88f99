"""How far ingest jobs have got (part of :mod:`poolq.ingest.client`): :func:`read_progress`
reads the records the workers of running jobs keep (``JOB_PROGRESS_KEY``,
:class:`~poolq.wire.records.progress.JobProgressRecord`), one round trip per thousand jobs;
:func:`totals` adds them up with the finished jobs' results into one :class:`WaitProgress`;
:func:`wait_jobs` is :meth:`PoolqClient.wait`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from redis.exceptions import AuthenticationError

from poolq.ingest.job_chain import Chains
from poolq.ingest.job_index import JobOutcome, chunks
from poolq.ingest.outage import OUTAGE_ERRORS
from poolq.ingest.workers_alive import no_worker_message
from poolq.wire import constants
from poolq.wire.connection import RedisUnavailableError
from poolq.wire.records.progress import JobProgressRecord
from poolq.wire.records.record import WireError
from poolq.wire.records.results import IngestResult

if TYPE_CHECKING:
    from poolq.ingest.client_reads import ClientReads

LOOK_EVERY_S = constants.HEARTBEAT_INTERVAL_S  # how often a wait looks for live workers


async def read_progress(redis: Any, job_ids: Sequence[str]) -> dict[str, JobProgressRecord]:
    """job id -> its progress record, for the jobs that have a readable one."""
    out: dict[str, JobProgressRecord] = {}
    for part in chunks(list(job_ids)):
        pipe = redis.pipeline(transaction=False)
        for job_id in part:
            pipe.hgetall(constants.JOB_PROGRESS_KEY.format(job_id=job_id))
        for job_id, raw in zip(part, await pipe.execute(), strict=True):
            if raw:
                with contextlib.suppress(WireError):  # not a hash a worker wrote: no progress
                    out[job_id] = JobProgressRecord.from_hash(raw)
    return out


@dataclass(frozen=True)
class WaitProgress:
    """Where a set of jobs stands: ``done`` documents of ``documents`` (those known: a queued
    job's count is known to the client that enqueued it, else once a worker starts it),
    ``chunks``, ``points``, ``errors``, ``skipped`` so far; jobs ``finished`` (done or failed) of
    ``jobs``, ``failed`` of them; ``workers_alive``: live workers at the last look (None: not
    looked yet); ``redis_down_s``: how long Redis has been unreachable (None: it answers; the
    counts are then those of the last look before the outage)."""

    jobs: int
    finished: int
    failed: int
    documents: int
    done: int
    chunks: int
    points: int
    errors: int
    skipped: int
    parsed: int = 0  # files the parse stage read, and their pages
    pages: int = 0
    ocr_pages: int = 0  # of those pages, the ones read by OCR
    workers_alive: int | None = None
    redis_down_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def totals(
    job_ids: Sequence[str],
    records: Mapping[str, JobProgressRecord],
    finished: Mapping[str, JobOutcome],
    sizes: Mapping[str, int],
    workers_alive: int | None = None,
) -> WaitProgress:
    """``records``: progress of the running jobs; ``finished``: outcomes of the finished ones;
    ``sizes``: documents per job where the caller knows them."""
    counted = ("done", "chunks", "points", "errors", "skipped", "parsed", "pages", "ocr_pages")
    sums = dict.fromkeys(("documents", *counted), 0)
    failed = 0
    for job_id in job_ids:
        rec = records.get(job_id) or JobProgressRecord()
        size = sizes.get(job_id) or rec.documents
        outcome = finished.get(job_id)
        if outcome is None:
            part = {f: getattr(rec, f) for f in counted}
        else:
            result = outcome.result
            if not isinstance(result, IngestResult):  # (a reindex, or a failed job)
                result = IngestResult(0, 0)
            failed += outcome.status == "failed"
            if not size:  # neither the caller nor a record knows: count what the result says
                size = result.size
            part = {
                "done": size,
                "chunks": rec.chunks,
                "points": result.points,
                "errors": len(result.errors),
                "skipped": result.skipped,
                "parsed": result.parsed,
                "pages": result.pages,
                "ocr_pages": max(result.ocr_pages, rec.ocr_pages),
            }
        sums["documents"] += size
        for k, v in part.items():
            sums[k] += v
    return WaitProgress(len(job_ids), len(finished), failed, workers_alive=workers_alive, **sums)


async def wait_jobs(
    client: ClientReads,
    job_ids: Sequence[str],
    *,
    timeout_s: float | None,
    poll_s: float,
    max_poll_s: float,
    progress: Callable[[JobOutcome], None] | None,
    on_progress: Callable[[WaitProgress], None] | None,
) -> list[JobOutcome]:
    """:meth:`PoolqClient.wait`: poll until every job is done or failed, through a Redis
    outage (see :mod:`poolq.ingest.outage`)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    ids = list(dict.fromkeys(job_ids))
    pending = list(ids)
    finished: dict[str, JobOutcome] = {}
    records: dict[str, JobProgressRecord] = {}
    interval = poll_s
    alive: int | None = None
    looked = -float("inf")
    sizes = client._job_sizes
    outage = client.outage()
    chains = Chains()  # parse jobs followed through the ingest jobs they handed on to
    ended: dict[str, JobOutcome] = {}  # every job seen to end (a chain's ingest jobs too)
    while True:
        done: dict[str, JobOutcome] = {}
        try:
            done = await client.finished(pending) if pending else {}
            ended.update(done)
            pending = [j for j in pending if j not in done]
            for job_id, o in done.items():
                if nexts := chains.follow(o):
                    pending += [n for n in nexts if n not in ended and n not in pending]
                elif job_id in ids:
                    finished[job_id] = o
                    if progress is not None:
                        progress(o)
            for o in chains.ended(ended):
                finished[o.job_id] = o
                if progress is not None:
                    progress(o)
            watching = on_progress is not None or deadline is not None
            if pending and watching and time.monotonic() - looked >= LOOK_EVERY_S:
                alive, looked = len(await client.live_workers()), time.monotonic()
            if on_progress is not None:
                records.update(await client.progress(pending + list(done)))
        except OUTAGE_ERRORS as e:
            if isinstance(e, RedisUnavailableError | AuthenticationError):
                raise
            interval = outage.failed(e)  # RedisUnavailableError past redis_outage_limit_s
            if on_progress is not None:
                now = totals(ids, chains.records(records), finished, sizes, alive)
                on_progress(replace(now, redis_down_s=outage.down_s))
        else:
            outage.succeeded()
            if on_progress is not None:
                on_progress(totals(ids, chains.records(records), finished, sizes, alive))
            if not pending:
                break
            interval = poll_s if done else min(max_poll_s, interval * 1.5)
        if deadline is not None and time.monotonic() > deadline:
            why = f" ({no_worker_message(client.redis_url)})" if alive == 0 else ""
            if outage.since is not None:
                why = f" (Redis at {outage.where} not reachable for {outage.down_s:.1f}s)"
            raise TimeoutError(
                f"{len(pending)} of {len(ids)} jobs not finished after {timeout_s:g}s{why}"
            )
        await asyncio.sleep(interval)
    for job_id in ids:
        sizes.pop(job_id, None)
    return [finished[j] for j in job_ids]
