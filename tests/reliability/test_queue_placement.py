"""One ordering policy through every entry into the queue (``wire/placement.py``): an
interactive job goes ahead of a bulk backlog when first enqueued, when arq retries it (the job
guard's ``Retry``), when a dead-lettered one is retried, and when the reaper hands it back; on a
real ``redis-server``, with arq's own ``run_job`` and ``enqueue_job``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from arq.connections import ArqRedis, create_pool
from arq.constants import in_progress_key_prefix
from arq.worker import func

from poolq.ingest.dashboard.overview import queues as overview_queues
from poolq.ingest.dead_letters import retry as dlq_retry
from poolq.ingest.job_index import index_status, outcomes
from poolq.sinks.store.errors import SinkUnavailableError, is_transient
from poolq.wire import constants
from poolq.wire.connection import redis_settings
from poolq.wire.placement import due_ms, queue_placement, score_ms
from poolq.worker.reliability import dead_letter
from poolq.worker.reliability.arq_overrides import PoolqWorker
from poolq.worker.reliability.job_guard import RETRY_BACKOFF_S, guarded
from poolq.worker.reliability.reaper import reap_dead_workers

QUEUE = constants.INGEST_QUEUE
BACKLOG = 5


async def _pool(url: str) -> ArqRedis:
    return await create_pool(redis_settings(url), default_queue_name=QUEUE)


async def _bulk_backlog(pool: ArqRedis) -> list[float]:
    """``BACKLOG`` bulk jobs, enqueued now as the client does; their scores."""
    scores = []
    for i in range(BACKLOG):
        await pool.enqueue_job(
            constants.INGEST_JOB,
            "c",
            [],
            priority="bulk",
            _job_id=f"bulk-{i}",
            **queue_placement("bulk", time.time(), pool.expires_extra_ms),
        )
        scores.append(await pool.zscore(QUEUE, f"bulk-{i}"))
    return scores


def test_score_ms_is_the_one_arithmetic_and_due_ms_inverts_it():
    now = 1_800_000_000_000
    assert score_ms("bulk", now) == now and score_ms("bulk", now, 2000) == now + 2000
    assert score_ms(None, now, 5) == now + 5  # no priority (reindex): bulk
    inter = score_ms("interactive", now, 2000)
    assert inter == now + 2000 - constants.INTERACTIVE_HEAD_START_MS
    assert due_ms(inter, now) == now + 2000 and due_ms(score_ms("bulk", now), now) == now


async def test_first_enqueue_places_an_interactive_job_ahead_of_the_backlog(redis_server):
    pool = await _pool(redis_server.url)
    try:
        backlog = await _bulk_backlog(pool)
        now_s = time.time()
        await pool.enqueue_job(
            constants.INGEST_JOB,
            "c",
            [],
            priority="interactive",
            _job_id="inter",
            **queue_placement("interactive", now_s, pool.expires_extra_ms),
        )
        score = await pool.zscore(QUEUE, "inter")
        assert score == score_ms("interactive", round(now_s * 1000))  # arq kept our score
        assert score < min(backlog)
    finally:
        await pool.aclose()


async def test_a_retried_interactive_job_stays_ahead_of_a_bulk_backlog(redis_server):
    """Its first try fails on a transient error while a bulk backlog builds up: the job guard
    raises arq's ``Retry``, arq's ``run_job`` re-scores it: still ahead of every bulk job, and
    not due before its backoff (``RETRY_BACKOFF_S[0]``) passed."""
    pool = await _pool(redis_server.url)
    gate = asyncio.Event()

    async def ingest(ctx: dict[str, Any], collection: str, documents: Any, **_: Any) -> None:
        await gate.wait()
        raise SinkUnavailableError("upsert", 3, ConnectionError("qdrant down"))

    w = PoolqWorker(
        functions=[
            func(guarded(ingest, name="ingest", max_tries=3, transient=is_transient), name="ingest")
        ],
        redis_pool=pool,
        queue_name=QUEUE,
    )
    try:
        await pool.enqueue_job(
            constants.INGEST_JOB,
            "c",
            [],
            priority="interactive",
            _job_id="inter",
            **queue_placement("interactive", time.time(), pool.expires_extra_ms),
        )
        await w.start_jobs([b"inter"])
        assert "inter" in w.tasks
        backlog = await _bulk_backlog(pool)  # while its first try runs
        gate.set()
        await asyncio.wait_for(w.tasks["inter"], 30)
        assert w.jobs_retried == 1
        score = await pool.zscore(QUEUE, "inter")
        now_ms = round(time.time() * 1000)
        assert score < min(backlog), "a retried interactive job fell behind the bulk backlog"
        assert due_ms(score, now_ms) >= now_ms + RETRY_BACKOFF_S[0] * 1000 - 500
        await w.start_jobs([b"inter"])  # polled again at once: it rests out its backoff
        assert w.tasks["inter"].done() and "inter" in w.resting
        # a person asking sees it resting (deferred), not queued; the backlog stays queued
        (outcome,) = await outcomes(pool, ["inter"], queue_name=QUEUE)
        assert outcome.status == "deferred"
        counts, _ = await index_status(
            pool, queue_name=QUEUE, now=time.time(), ttl_s=60, limit=0, live=[]
        )
        assert (counts["deferred"], counts["queued"]) == (1, BACKLOG)
        lanes = await overview_queues(pool, now=time.time(), live=[])
        assert (lanes["interactive"], lanes["bulk"], lanes["deferred"]) == (0, BACKLOG, 1)
    finally:
        gate.set()
        await asyncio.gather(*w.tasks.values(), return_exceptions=True)
        await pool.aclose()


async def test_a_dead_letter_retry_places_an_interactive_job_ahead_of_the_backlog(redis_server):
    pool = await _pool(redis_server.url)
    try:
        for job_id, priority in (("dead-inter", "interactive"), ("dead-bulk", "bulk")):
            await dead_letter.record(
                pool,
                job_id,
                constants.INGEST_JOB,
                ["c", []],
                {"force": False, "priority": priority},
                RuntimeError("boom"),
                3,
            )
        backlog = await _bulk_backlog(pool)
        new = await dlq_retry(pool, ["dead-inter", "dead-bulk"])
        inter = await pool.zscore(QUEUE, new["dead-inter"])
        bulk = await pool.zscore(QUEUE, new["dead-bulk"])
        assert inter < min(backlog), "a DLQ-retried interactive job went behind the backlog"
        assert bulk >= max(backlog)  # a bulk one goes behind it, in enqueue order
    finally:
        await pool.aclose()


async def test_the_reaper_hands_an_interactive_job_back_in_its_place(redis_server):
    """A dead worker's job is handed back by dropping its in-progress mark: it keeps the score
    it was placed with."""
    pool = await _pool(redis_server.url)
    try:
        await pool.enqueue_job(
            constants.INGEST_JOB,
            "c",
            [],
            priority="interactive",
            _job_id="inter",
            **queue_placement("interactive", time.time(), pool.expires_extra_ms),
        )
        placed = await pool.zscore(QUEUE, "inter")
        await pool.psetex(in_progress_key_prefix + "inter", 60_000, b"1")
        await pool.sadd(constants.WORKER_JOBS_KEY.format(worker_id="dead"), "inter")
        backlog = await _bulk_backlog(pool)
        assert await reap_dead_workers(pool) == ["inter"]
        assert await pool.zscore(QUEUE, "inter") == placed < min(backlog)
    finally:
        await pool.aclose()
