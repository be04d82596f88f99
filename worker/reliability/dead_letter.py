"""The dead-letter list, the worker's side: jobs that failed for good (their last try, or an
error no retry can fix), kept with their arguments and error so that ``poolq dlq
list|retry|drop`` can act on them (reading the list: ``wire/dead_letters.py``, which both sides
import; retry and drop: the client's ``ingest/dead_letters.py``).

Stored as one Redis hash (``DEAD_LETTER_KEY``): job id -> msgpack
:class:`~poolq.wire.records.dead_letter.DeadLetter` ``{"job_id", "function", "args",
"kwargs", "error", "tries", "failed_at", "code"}``. A job is dead-lettered and counted as
failed in the job index (its writer: ``worker/reliability/job_records.py``) in one
transaction; dropping or retrying it takes it out of both.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis

from poolq.wire import constants
from poolq.wire.records.dead_letter import DeadLetter
from poolq.wire.records.errors import ErrorRecord
from poolq.worker.reliability import job_records


async def record(
    redis: Redis,
    job_id: str,
    function: str,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    error: BaseException,
    tries: int,
    *,
    ttl_s: float = constants.JOB_INDEX_TTL_S,
) -> None:
    """Dead-letter ``job_id`` and count it as failed (its outcome kept ``ttl_s``)."""
    err = ErrorRecord.of(error)
    entry = DeadLetter(
        job_id, function, list(args), dict(kwargs), err.text(), tries, time.time(), code=err.code
    )
    async with redis.pipeline(transaction=True) as tr:
        tr.hset(constants.DEAD_LETTER_KEY, job_id, entry.pack())  # type: ignore[arg-type]
        job_records.add_outcome(
            tr,
            job_id,
            success=False,
            error=entry.error,
            code=err.code,
            now=entry.failed_at,
            ttl_s=ttl_s,
        )
        await tr.execute()
