"""The job index behind ``poolq status`` and :meth:`PoolqClient.wait`: what workers record
about their jobs themselves: the reading side, part of :mod:`poolq.ingest.client` (workers
write it through ``worker/reliability/job_records.py``).

Written by workers:

* a job that ends is added, scored by its end time, to the sorted set of done jobs
  (:data:`~poolq.wire.constants.JOB_INDEX_DONE_KEY`) or of failed jobs
  (``JOB_INDEX_FAILED_KEY``: failed for good, on a permanent error or on its last try; a retry
  is neither), and its outcome (the job's result or error, never its documents) is kept under
  ``JOB_OUTCOME_KEY``; in the same transaction both sets are trimmed to the last ``ttl_s``
  (arq's result TTL) and the outcome expires after it. Jobs arq fails without running them
  (expired, max tries exceeded, unknown function) and jobs the reaper dead-letters count as
  failed too; dropping or retrying a dead letter takes it out of the failed set;
* every live worker records when it was last seen (``WORKER_LAST_SEEN_KEY``) and every
  collection a reindex runs on is listed (``REINDEX_COLLECTIONS_KEY``), so a status finds the
  heartbeats and reindex progress without a SCAN of the keyspace (which holds the arq result of
  every job of the day).

Read by clients, in a few commands whatever the number of jobs: queued and deferred are arq's
queue before and after now, less the running jobs (arq keeps a job in its queue until it ends);
running are the job lists of live workers; done and failed a ``ZCOUNT`` over the TTL. The
outcomes of given jobs take one pipeline per thousand jobs: the outcome record, else arq's
in-progress mark, else the queue; a job that ended without an outcome record (its worker could
not write it) is read from arq's result with arq's ``deserialize_result``. Results are read back
as their records (:func:`~poolq.wire.records.outcome.job_result`), errors with their codes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from arq.constants import in_progress_key_prefix, result_key_prefix
from arq.jobs import deserialize_result

from poolq.wire import constants
from poolq.wire.placement import due_ms, resting_scores
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.errors import failure_of
from poolq.wire.records.outcome import JobOutcomeRecord, JobResult, job_result, outcome_key
from poolq.wire.records.record import WireError
from poolq.wire.records.results import IngestResult
from poolq.wire.serialization import deserialize, redis_text

CHUNK = 1000  # job ids per command (or pipeline)
STATUSES = ("queued", "running", "done", "failed", "not_found", "deferred")
# of given jobs, also: ingest jobs whose every document was refused (see JobOutcome); the
# index counts them among done (it does not read results)
GIVEN_STATUSES = (*STATUSES, "refused")
DONE, FAILED = constants.JOB_INDEX_DONE_KEY, constants.JOB_INDEX_FAILED_KEY


@dataclass(frozen=True)
class JobOutcome:
    """``status``: queued | deferred | running | done | refused | failed | cancelled |
    not_found (``cancelled``: see ``wire/cancel.py``).
    ``refused``: an ingest job that ended without failing but whose every document was refused
    (its ``result`` lists them under ``errors``; nothing written, nothing skipped).

    ``result``: a finished job's record (:data:`~poolq.wire.records.outcome.JobResult`): an
    :class:`~poolq.wire.records.results.IngestResult` for an ingest job, a
    :class:`~poolq.wire.records.reindex.ReindexSummary` (or ``ReindexSkipped``) for a reindex.
    ``error`` (``Type: message``, for people) and ``code`` (what a program decides by) of a
    failed job; a result that does not decode is a failure too (``internal``, its error naming
    the field)."""

    job_id: str
    status: str
    result: JobResult | None = None
    error: str | None = None
    code: ErrorCode | None = None


def ended(job_id: str, result: Any) -> JobOutcome:
    """The outcome of a job that ended without failing, its ``result`` as stored: ``refused``
    when it is an ingest result whose every document was refused, else ``done``."""
    try:
        record = job_result(result)
    except WireError as e:
        return JobOutcome(job_id, "failed", None, f"unreadable result: {e}", ErrorCode.INTERNAL)
    status = "refused" if isinstance(record, IngestResult) and record.all_refused else "done"
    return JobOutcome(job_id, status, record)


def chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), CHUNK):
        yield items[i : i + CHUNK]


# ---------------------------------------------------------------- read by clients


def _recorded(job_id: str, raw: bytes | None) -> JobOutcome | None:
    if not raw:
        return None
    try:
        record = JobOutcomeRecord.unpack(raw)
    except WireError:  # not an outcome record: read arq's result instead
        return None
    if record.status == "done":
        return ended(job_id, record.result)
    if record.status == "cancelled":  # (wire/cancel.py: its error tells how far it got)
        return JobOutcome(job_id, "cancelled", None, record.error)
    return JobOutcome(job_id, "failed", None, record.error, record.code)


def from_arq_result(job_id: str, raw: bytes) -> JobOutcome:
    """The outcome of a job from its arq result as stored (poolq's msgpack serializer): see
    :func:`ended` for one that succeeded; a failure carries the code of its error record."""
    try:
        info = deserialize_result(raw, deserializer=deserialize)
    except Exception as e:  # not poolq's serializer (an arq worker using pickle, say)
        error = f"unreadable result ({type(e).__name__})"
        return JobOutcome(job_id, "failed", None, error, ErrorCode.INTERNAL)
    if info.success:
        return ended(job_id, info.result)
    err = failure_of(info.result)
    return JobOutcome(job_id, "failed", None, err.text(), err.code)


async def _finished(
    redis: Any, chunk: Sequence[str], *, states: bool, queue_name: str, now_ms: int
) -> dict[str, JobOutcome]:
    """The outcomes of the jobs of ``chunk`` that ended, and with ``states`` those of the others
    too (running, queued, deferred, not_found). One MGET, then one pipeline for the jobs
    without an outcome record (few, unless ``states``)."""
    raws = await redis.mget([outcome_key(j) for j in chunk])
    found = {j: o for j, raw in zip(chunk, raws, strict=True) if (o := _recorded(j, raw))}
    rest = [j for j in chunk if j not in found]
    if not rest:
        return found
    async with redis.pipeline(transaction=False) as p:
        for j in rest:
            p.exists(result_key_prefix + j)
            if states:
                p.exists(in_progress_key_prefix + j)
                p.zscore(queue_name, j)
                p.zscore(constants.PARSE_QUEUE, j)  # (a parse job waits in a queue of its own)
        replies = await p.execute()
    step = 4 if states else 1
    by_result = [j for k, j in enumerate(rest) if replies[k * step]]
    if by_result:  # ended without an outcome record: arq's whole result
        raws = await redis.mget([result_key_prefix + j for j in by_result])
        for j, raw in zip(by_result, raws, strict=True):
            if raw is not None:  # (None: expired meanwhile)
                found[j] = from_arq_result(j, raw)
    if states:
        for k, j in enumerate(rest):
            if j in found:
                continue
            running, score = replies[k * step + 1], replies[k * step + 2]
            if score is None:
                score = replies[k * step + 3]
            status = "running" if running else "not_found" if score is None else (
                "deferred" if due_ms(float(score), now_ms) > now_ms else "queued"
            )  # fmt: skip
            found[j] = JobOutcome(j, status)
    return found


async def outcomes(redis: Any, job_ids: Sequence[str], *, queue_name: str) -> list[JobOutcome]:
    """The state of each job, in order (done or failed, else running, else in the queue, else
    not_found), with results."""
    out: list[JobOutcome] = []
    now_ms = round(time.time() * 1000)  # as arq: timestamp_ms()
    for chunk in chunks([redis_text(j) for j in job_ids]):
        found = await _finished(redis, chunk, states=True, queue_name=queue_name, now_ms=now_ms)
        out.extend(found[j] for j in chunk)
    return out


async def read_finished(redis: Any, job_ids: Sequence[str]) -> dict[str, JobOutcome]:
    """The outcomes of the jobs among ``job_ids`` that are done or failed."""
    found: dict[str, JobOutcome] = {}
    for chunk in chunks([redis_text(j) for j in job_ids]):
        found |= await _finished(redis, chunk, states=False, queue_name="", now_ms=0)
    return found


async def reindex_collections(redis: Any) -> list[str]:
    return [redis_text(c) for c in await redis.zrange(constants.REINDEX_COLLECTIONS_KEY, 0, -1)]


async def index_status(
    redis: Any, *, queue_name: str, now: float, ttl_s: float, limit: int, live: Sequence[str]
) -> tuple[dict[str, int], list[JobOutcome]]:
    """Counts of the jobs in the queue (and in the parse queue: files waiting to be parsed),
    running on the ``live`` workers, and done or failed within ``ttl_s``; and the outcomes of
    the running jobs and of the newest finished ones, at most ``limit`` (newest first)."""
    now_ms, cutoff = round(now * 1000), now - ttl_s  # (arq rounds its scores too)
    queues = list(dict.fromkeys((queue_name, constants.PARSE_QUEUE)))
    async with redis.pipeline(transaction=False) as p:
        for q in queues:
            p.zcount(q, "-inf", now_ms)
            p.zcount(q, f"({now_ms}", "+inf")
            p.zcount(q, *resting_scores(now_ms))  # due by score, resting out a backoff
        p.zcount(DONE, cutoff, "+inf")
        p.zcount(FAILED, cutoff, "+inf")
        for key in (DONE, FAILED):
            p.zrevrangebyscore(key, "+inf", cutoff, start=0, num=max(1, limit), withscores=True)
        if live:
            p.sunion([constants.WORKER_JOBS_KEY.format(worker_id=w) for w in live])
        replies = await p.execute()
    n = 3 * len(queues)
    waiting, (done, failed), newest = replies[:n], replies[n : n + 2], replies[n + 2 :]
    resting = sum(waiting[2::3])
    due, later = sum(waiting[0::3]) - resting, sum(waiting[1::3]) + resting
    running = sorted(redis_text(j) for j in newest.pop()) if live else []
    queued = []  # running jobs arq keeps in their queue until they end
    for q in queues:
        scores = await redis.zmscore(q, running) if running else []
        queued += [due_ms(s, now_ms) for s in scores if s is not None]
    counts = dict.fromkeys(STATUSES, 0) | {
        "queued": max(0, due - sum(d <= now_ms for d in queued)),
        "deferred": max(0, later - sum(d > now_ms for d in queued)),
        "running": len(running),
        "done": done,
        "failed": failed,
    }
    finished = sorted(((redis_text(m), s) for rows in newest for m, s in rows), key=lambda x: -x[1])
    listed = [*running, *(j for j, _ in finished)][: max(0, limit)]
    return counts, await outcomes(redis, listed, queue_name=queue_name) if listed else []
