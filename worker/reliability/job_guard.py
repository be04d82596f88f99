"""What every job goes through around its body: transient failures retried by the queue with
backoff, permanent ones (and the last try) sent to the dead-letter list, running jobs registered
under the worker so that a live worker can hand back the jobs of a dead one (see reaper.py).

A transient failure is one that waiting can fix: Qdrant unavailable past the writer's own
retries, Redis or the network down. Bad input is not: it fails at once, without retries.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from arq.worker import Retry
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from poolq.sinks.store.errors import SinkUnavailableError, is_transient
from poolq.worker.reliability import dead_letter
from poolq.worker.wire import constants

log = logging.getLogger("poolq.jobs")
RETRY_BACKOFF_S = (2.0, 10.0, 30.0, 60.0, 120.0)  # queue-level delay before try 2, 3, ...

JobFn = Callable[..., Coroutine[Any, Any, Any]]


def is_transient_job_error(e: BaseException) -> bool:
    if isinstance(e, SinkUnavailableError | RedisConnectionError | RedisTimeoutError):
        return True
    return is_transient(e)


def retry_delay(e: BaseException, job_try: int, max_tries: int) -> float | None:
    """What a job's failure on try ``job_try`` (of ``max_tries``) becomes: the queue-level delay
    in seconds before the next try, or None when it fails for good (a permanent error, or a
    transient one on the last try) and goes to the dead-letter list."""
    if is_transient_job_error(e) and job_try < max_tries:
        return RETRY_BACKOFF_S[min(job_try - 1, len(RETRY_BACKOFF_S) - 1)]
    return None


def guarded(fn: JobFn, *, name: str, max_tries: int) -> JobFn:
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
        if redis is not None and running_key is not None:
            with contextlib.suppress(Exception):  # best effort: only speeds up recovery
                await redis.sadd(running_key, job_id)
        t0 = time.perf_counter()
        fields = {"job_id": job_id, "function": name, "job_try": job_try}
        log.info("job %s %s try %d started", job_id, name, job_try, extra=fields)
        try:
            result = await fn(ctx, *args, **kwargs)
        except Exception as e:
            seconds = time.perf_counter() - t0
            delay = retry_delay(e, job_try, max_tries)
            if delay is not None:
                log.warning(
                    "job %s %s try %d of %d failed after %.2fs, retrying in %.0fs: %s",
                    job_id, name, job_try, max_tries, seconds, delay, e, extra=fields,
                )  # fmt: skip
                if rt is not None:
                    rt.jobs_retried += 1
                raise Retry(defer=delay) from e
            log.error(
                "job %s %s failed for good after %d tries (%.2fs), dead-lettered: %s",
                job_id, name, job_try, seconds, e, extra=fields,
            )  # fmt: skip
            if rt is not None:
                rt.jobs_failed += 1
            if redis is not None:
                try:
                    await dead_letter.record(redis, job_id, name, args, kwargs, e, job_try)
                except Exception:
                    log.exception("job %s: could not record it in the dead-letter list", job_id)
            raise
        finally:
            if redis is not None and running_key is not None:
                # best effort: after a dead worker, the reaper cleans up
                with contextlib.suppress(Exception):
                    await redis.srem(running_key, job_id)
        seconds = time.perf_counter() - t0
        log.info(
            "job %s %s done in %.2fs", job_id, name, seconds, extra=fields | {"seconds": seconds}
        )
        return result

    return run
