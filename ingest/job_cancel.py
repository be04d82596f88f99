"""Cancelling a job, the client's side (:meth:`PoolqClient.cancel
<poolq.ingest.client.PoolqClient.cancel>`, ``poolq cancel``, the dashboard).

The job's cancel flag is set first (``wire/cancel.py``), so whichever way a race with a worker
goes the job does not run on. Then: a job that has ended already is left alone (``finished``,
and the flag is taken back); a running job (arq's in-progress mark) stops at its next batch
boundary (``cancelling``: its worker records it as cancelled, its points written so far are
kept); a queued or deferred job is taken out of its queue and recorded as cancelled at once
(``cancelled``). A worker that took the job in between sees the flag before it starts it.
"""

from __future__ import annotations

import time
from typing import Any

from arq.constants import in_progress_key_prefix

from poolq.wire import constants
from poolq.wire.cancel import add_cancelled, cancel_key
from poolq.wire.records.cancel import CancelRequest
from poolq.wire.records.outcome import JobOutcomeRecord, outcome_key
from poolq.wire.records.record import WireError

QUEUES = (constants.INGEST_QUEUE, constants.PARSE_QUEUE)


async def _ended(redis: Any, job_id: str) -> str | None:
    raw = await redis.get(outcome_key(job_id))
    if not raw:
        return None
    try:
        return JobOutcomeRecord.unpack(raw).status
    except WireError:
        return "done"


async def cancel(redis: Any, job_id: str, *, now: float | None = None) -> CancelRequest:
    """Cancel ``job_id`` (see the module docstring); what happened, as a record."""
    now = time.time() if now is None else now
    status = await _ended(redis, job_id)
    if status is not None:
        return CancelRequest(job_id, "cancelled" if status == "cancelled" else "finished")
    await redis.set(cancel_key(job_id), b"1", ex=constants.JOB_INDEX_TTL_S)
    if await redis.exists(in_progress_key_prefix + job_id):
        return CancelRequest(job_id, "cancelling")
    async with redis.pipeline(transaction=True) as tr:
        for q in QUEUES:
            tr.zrem(q, job_id)
        removed = await tr.execute()
    if any(removed):
        async with redis.pipeline(transaction=True) as tr:
            add_cancelled(tr, job_id, now=now, note="cancelled while queued")
            await tr.execute()
        return CancelRequest(job_id, "cancelled")
    if await redis.exists(in_progress_key_prefix + job_id):  # taken meanwhile: the flag stops it
        return CancelRequest(job_id, "cancelling")
    await redis.delete(cancel_key(job_id))
    return CancelRequest(job_id, "finished" if await _ended(redis, job_id) else "not_found")
