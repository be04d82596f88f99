"""How jobs the guard (``job_guard.py``) did not see end get into the job index, through arq's
hooks: jobs arq fails without running them (expired, max tries exceeded, unknown function) are
counted as failed, and jobs that ended unguarded (a cron job; one arq timed out, where the guard
saw only a cancellation) are recorded from arq's result."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from arq.constants import result_key_prefix
from arq.jobs import deserialize_result

from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.errors import failure_of
from poolq.wire.records.outcome import outcome_key
from poolq.wire.serialization import deserialize
from poolq.worker.reliability import job_records
from poolq.worker.reliability.arq_overrides import poolq_worker

log = logging.getLogger("poolq.jobs")

_PENDING: set[asyncio.Task[None]] = set()  # outcomes being recorded (referenced until done)


def unrun_failure(result_data: bytes | None) -> tuple[str, str, ErrorCode] | None:
    """The job id, error and its code in arq's serialized result of a job it failed without
    running it (arq's ``JobExecutionFailed``: ``internal``); None when arq could not serialize
    one."""
    if not result_data:
        return None
    try:
        info = deserialize_result(result_data, deserializer=deserialize)
    except Exception:
        return None
    if not info.job_id:
        return None
    err = failure_of(info.result)
    return str(info.job_id), err.text(), err.code


async def record_unguarded(redis: Any, job_id: str, ttl_s: float) -> None:
    """After a job ended: if the guard recorded nothing (a cron job, which is not guarded, or a
    job arq timed out, where the guard saw only a cancellation), record it from arq's result.
    No result: retried or cancelled, it runs again."""
    if await redis.exists(outcome_key(job_id)):
        return
    raw = await redis.get(result_key_prefix + job_id)
    if raw is not None:
        success, result, error, code = job_records.arq_outcome(raw)
        await job_records.record_best_effort(
            redis, job_id, success=success, result=result, error=error, code=code, ttl_s=ttl_s
        )


async def install_job_index(ctx: dict[str, Any]) -> None:
    """In the worker's startup: jobs arq fails without running them (expired, max tries
    exceeded, unknown function) are counted as failed, through the worker's ``failed_unrun``
    listeners, and jobs that ended unguarded are recorded from arq's result (its public
    ``after_job_end`` hook, chained); the worker is listed as seen (the reaper refreshes it,
    see reaper.py) and the collections of its scheduled reindexes are listed for ``poolq
    status``."""
    redis, ttl_s = ctx["redis"], job_records.result_ttl_s(ctx)
    worker = poolq_worker(ctx)  # (arq's own Worker, under arq's CLI: refused, one line)

    def failed_unrun(result_data: bytes | None) -> None:
        failure = unrun_failure(result_data)
        if failure is None:
            log.warning("a job failed before it ran and arq gave no result: not counted")
            return
        job_id, error, code = failure
        task = asyncio.get_running_loop().create_task(
            job_records.record_best_effort(
                redis, job_id, success=False, error=error, code=code, ttl_s=ttl_s
            )
        )
        _PENDING.add(task)
        task.add_done_callback(_PENDING.discard)

    worker.failed_unrun.append(failed_unrun)
    previous = worker.after_job_end

    async def after_job_end(ctx: dict[Any, Any]) -> None:  # (arq's hook type names it ctx)
        with contextlib.suppress(Exception):  # best effort, as the guard's own record
            if not ctx.get(job_records.OUTCOME_RECORDED):
                await record_unguarded(redis, str(ctx["job_id"]), ttl_s)
        if previous is not None:
            await previous(ctx)

    worker.after_job_end = after_job_end
    rt = ctx.get("runtime")
    with contextlib.suppress(Exception):  # Redis restarting: the reaper's next pass will do
        if rt is not None:
            await job_records.worker_seen(redis, str(rt.worker_id))
        for schedule in getattr(ctx.get("settings"), "reindex", ()):
            await job_records.reindex_listed(redis, schedule.collection)
