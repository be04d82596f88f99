"""What every job goes through around its body: transient failures retried by the queue with
backoff, permanent ones (and the last try) sent to the dead-letter list, running jobs registered
under the worker so that a live worker can hand back the jobs of a dead one (see reaper.py), and
how each job ended recorded in the job index (``job_records.py``): done, or failed for good
(a retry is neither). :func:`install_job_index` (in the worker's startup) counts the jobs arq
fails without running them as failed too.

A job whose cancel flag is set (``wire/cancel.py``) does not start, and a running one stops at
its next batch boundary: it is recorded as ``cancelled``, neither retried nor dead-lettered.

A transient failure is one that waiting can fix: Redis or the network down, a call that timed
out, a job that stalled, and what the
worker's own classifier says (``transient``: the encode worker's is the store's,
``sinks/store/errors.is_transient``: Qdrant unavailable past the writer's own retries, the
network down). Bad input is not: it fails at once, without retries. The guard itself imports no
store, so the parse role runs without one.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from arq.utils import timestamp_ms
from arq.worker import Function, Retry, func
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from poolq.wire import constants
from poolq.wire.cancel import JobCancelledError, add_cancelled, cancel_key
from poolq.wire.placement import retry_defer_ms
from poolq.wire.records.outcome import JobOutcomeRecord, outcome_key
from poolq.worker.observability.job_outcomes import labelled
from poolq.worker.reliability import dead_letter, job_records
from poolq.worker.reliability.deadlines import JobClock, JobDeadlineError, run_with_deadlines
from poolq.worker.reliability.run_lock import RunLocks

log = logging.getLogger("poolq.jobs")
RETRY_BACKOFF_S = (2.0, 10.0, 30.0, 60.0, 120.0)  # queue-level delay before try 2, 3, ...

JobFn = Callable[..., Coroutine[Any, Any, Any]]
Transient = Callable[[BaseException], bool]  # whether waiting may fix an error of the job's


def is_transient_job_error(e: BaseException, transient: Transient | None = None) -> bool:
    if isinstance(e, RedisConnectionError | RedisTimeoutError | ConnectionError | TimeoutError):
        return True  # Redis or the network down, a call that timed out
    if isinstance(e, JobDeadlineError):  # stalled or past the ceiling: another try may pass
        return True
    return transient is not None and transient(e)


def retry_delay(
    e: BaseException, job_try: int, max_tries: int, transient: Transient | None = None
) -> float | None:
    """What a job's failure on try ``job_try`` (of ``max_tries``) becomes: the queue-level delay
    in seconds before the next try, or None when it fails for good (a permanent error, or a
    transient one on the last try) and goes to the dead-letter list."""
    if is_transient_job_error(e, transient) and job_try < max_tries:
        return RETRY_BACKOFF_S[min(job_try - 1, len(RETRY_BACKOFF_S) - 1)]
    return None


def retry_in_place(priority: object, delay_s: float) -> Retry:
    """arq's ``Retry`` for a job of ``priority`` due again in ``delay_s``, placed where
    ``wire/placement.py`` places every job: an interactive one stays ahead of every bulk job
    (the worker holds it until ``delay_s`` passed, ``arq_overrides.py``)."""
    defer_ms = retry_defer_ms(priority, round(delay_s * 1000), timestamp_ms())
    return Retry(defer=defer_ms / 1000)


def guarded_function(
    fn: JobFn,
    *,
    name: str,
    max_tries: int,
    transient: Transient | None = None,
    **arq_options: Any,
) -> Function:
    """``fn`` guarded (:func:`guarded`) as arq's job function ``name`` (``arq.worker.func``, with
    its other options, ``timeout`` say), labelled ``name`` for the job outcome metrics
    (``job_outcomes.labelled``)."""
    run = labelled(guarded(fn, name=name, max_tries=max_tries, transient=transient), name)
    return func(run, name=name, max_tries=max_tries, **arq_options)


def guarded(fn: JobFn, *, name: str, max_tries: int, transient: Transient | None = None) -> JobFn:
    """Wrap a job coroutine (see the module docstring)."""

    @functools.wraps(fn)
    async def run(ctx: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        job_id = str(ctx.get("job_id", "local"))
        job_try = int(ctx.get("job_try", 1))
        redis = ctx.get("redis")
        rt = ctx.get("runtime")
        running_key = (
            constants.WORKER_JOBS_KEY.format(worker_id=rt.worker_id) if rt is not None else None
        )
        ttl_s = job_records.result_ttl_s(ctx)
        locks = getattr(rt, "run_locks", None)
        if redis is not None and locks is not None:
            # the lock and the running list in one call (run_lock.py)
            if not await locks.acquire(redis, job_id, running_key):
                # handed back while its first run is alive: one run at a time (run_lock.py)
                ended = await _wait_for_other_run(redis, locks, job_id)
                if ended is not None:
                    return ended
                await _listed(redis, running_key, job_id)
        elif redis is not None:
            await _listed(redis, running_key, job_id)
        if redis is not None and name == constants.REINDEX_JOB:
            await _list_reindex(redis, args, kwargs)
        t0 = time.perf_counter()
        fields = {"job_id": job_id, "function": name, "job_try": job_try}
        log.info("job %s %s try %d started", job_id, name, job_try, extra=fields)
        clock = ctx["job_clock"] = JobClock()
        settings = ctx.get("settings") if name == constants.INGEST_JOB else None
        stall_s = getattr(settings, "job_stall_timeout_s", None)
        ceiling_s = getattr(settings, "job_timeout_s", None)
        vectorizer = getattr(rt, "vectorizer", None)
        unlisted = False  # the job's last writes left the running list already
        try:
            if redis is not None and await _cancel_requested(redis, job_id):
                raise JobCancelledError("cancelled before it started")
            result = await run_with_deadlines(
                fn(ctx, *args, **kwargs),
                what=f"job {job_id} {name} (try {job_try} of {max_tries})",
                clock=clock,
                stall_s=stall_s,
                ceiling_s=ceiling_s,
                engine_progress=(
                    (lambda: vectorizer.last_served(job_id))
                    if vectorizer is not None
                    else lambda: None
                ),
            )
            if redis is not None:  # done: counted before it leaves the running list
                done = functools.partial(
                    job_records.add_outcome, job_id=job_id, success=True, result=result,
                    ttl_s=ttl_s,
                )  # fmt: skip
                unlisted = await _record_end(redis, job_id, done, running_key, locks)
                ctx[job_records.OUTCOME_RECORDED] = unlisted
        except JobCancelledError as e:  # not a failure: no retry, no dead letter
            result = None
            log.info("job %s %s %s", job_id, name, e, extra=fields)
            if redis is not None:
                cancelled = functools.partial(
                    add_cancelled, job_id=job_id, now=time.time(), note=str(e), ttl_s=ttl_s
                )
                unlisted = await _record_end(redis, job_id, cancelled, running_key, locks)
                ctx[job_records.OUTCOME_RECORDED] = unlisted
        except Exception as e:
            seconds = time.perf_counter() - t0
            delay = retry_delay(e, job_try, max_tries, transient)
            if delay is not None:
                log.warning(
                    "job %s %s try %d of %d failed after %.2fs, retrying in %.0fs: %s",
                    job_id, name, job_try, max_tries, seconds, delay, e, extra=fields,
                )  # fmt: skip
                if rt is not None:
                    rt.jobs_retried += 1
                raise retry_in_place(kwargs.get("priority"), delay) from e
            log.error(
                "job %s %s failed for good after %d tries (%.2fs), dead-lettered: %s",
                job_id, name, job_try, seconds, e, extra=fields,
            )  # fmt: skip
            if rt is not None:
                rt.jobs_failed += 1
            if redis is not None:
                try:
                    await dead_letter.record(
                        redis, job_id, name, args, kwargs, e, job_try, ttl_s=ttl_s
                    )  # (and counted as failed)
                    ctx[job_records.OUTCOME_RECORDED] = True
                except Exception:
                    log.exception("job %s: could not record it in the dead-letter list", job_id)
            raise
        finally:
            if rt is not None and getattr(rt, "admission", None) is not None:
                rt.admission.ended(job_id)
            if vectorizer is not None:
                vectorizer.forget_group(job_id)
            if redis is not None and running_key is not None and not unlisted:
                # best effort: after a dead worker, the reaper cleans up
                with contextlib.suppress(Exception):
                    await redis.srem(running_key, job_id)
            if redis is not None and locks is not None:
                with contextlib.suppress(Exception):  # else it expires (no-op once released)
                    await locks.release(redis, job_id)
        seconds = time.perf_counter() - t0
        log.info(
            "job %s %s done in %.2fs", job_id, name, seconds, extra=fields | {"seconds": seconds}
        )
        return result

    return run


async def _cancel_requested(redis: Any, job_id: str) -> bool:
    """Whether the job's cancel flag is set; False when Redis cannot say (a Redis outage must
    neither mask the job's own outcome nor turn into a retry of its own: the running job sees
    the flag at its next batch boundary)."""
    try:
        return bool(await redis.exists(cancel_key(job_id)))
    except Exception as e:
        log.warning("job %s: could not read its cancel flag, running it: %s", job_id, e)
        return False


async def _wait_for_other_run(redis: Any, locks: RunLocks, job_id: str) -> Any:
    """Another run holds the job's lock: wait for it. Its result once it finished (None once
    the lock is this run's: the other run died or ended without an outcome)."""
    log.warning(
        "job %s is running elsewhere (run lock held by %s): waiting for that run instead of "
        "running the job twice",
        job_id,
        await locks.holder(redis, job_id),
    )

    async def finished() -> bool:
        return bool(await redis.exists(outcome_key(job_id)))

    if await locks.wait_turn(redis, job_id, finished):
        return None
    raw = await redis.get(outcome_key(job_id))
    outcome = JobOutcomeRecord.unpack(raw) if raw is not None else None
    if outcome is None or outcome.status != "done":
        error = outcome.error if outcome is not None else None
        raise JobRanElsewhereError(
            f"job {job_id}: its other run failed: {error or 'no error recorded'}"
        )
    log.info("job %s: its other run finished; returning that run's result", job_id)
    return outcome.result


class JobRanElsewhereError(RuntimeError):
    pass


async def _listed(redis: Any, running_key: str | None, job_id: str) -> None:
    if running_key is not None:
        with contextlib.suppress(Exception):  # best effort: only speeds up recovery
            await redis.sadd(running_key, job_id)


async def _record_end(
    redis: Any,
    job_id: str,
    add_outcome: Callable[[Any], None],
    running_key: str | None,
    locks: RunLocks | None,
) -> bool:
    """A job's last writes in one transaction: its outcome recorded (``add_outcome`` queues it
    on the transaction), then it leaves the running list and its run lock is released. False
    (logged) if Redis failed: the outcome is then missing (``poolq status`` falls back on arq's
    result) and the guard's ``finally`` unlists the job itself; the lock, already counted
    released, expires."""
    try:
        async with redis.pipeline(transaction=True) as tr:
            add_outcome(tr)
            if running_key is not None:
                tr.srem(running_key, job_id)
            if locks is not None:
                locks.add_release(tr, job_id)
            await tr.execute()
        return True
    except Exception as e:
        log.warning("job %s: could not record its end in the job index: %s", job_id, e)
        return False


async def _list_reindex(redis: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    collection = kwargs.get("collection", args[1] if len(args) > 1 else None)
    if isinstance(collection, str) and collection:
        with contextlib.suppress(Exception):  # best effort: status shows its progress
            await job_records.reindex_listed(redis, collection)
