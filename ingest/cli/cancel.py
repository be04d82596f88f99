"""``poolq cancel JOB_ID...``: cancel queued or running jobs (:meth:`PoolqClient.cancel`)."""

from __future__ import annotations

import asyncio
import json

from poolq.ingest.cli.command_env import CLIENT_ERRORS, error, resolve_redis_url
from poolq.wire.records.cancel import CancelRequest

CANCEL_JSON = (
    "JSON lines, one object per job: {job_id, state}; state: cancelled (it was queued and will "
    "not run), cancelling (it runs and stops at its next batch boundary), finished (it had "
    "ended) or not_found."
)
SAID = {
    "cancelled": "cancelled (it was queued: it will not run)",
    "cancelling": "cancelling: it stops at its next batch boundary (points written so far stay)",
    "finished": "not cancelled: it had finished already",
    "not_found": "not cancelled: no such job",
}


async def _run(job_ids: list[str], redis_url: str) -> list[CancelRequest]:
    from poolq.ingest.client import PoolqClient

    async with PoolqClient(redis_url) as client:
        return [await client.cancel(j) for j in job_ids]


def run_cancel(job_ids: list[str], redis_url: str | None, as_json: bool) -> int:
    """Exit code 0 when every job was cancelled or is cancelling, 1 when one was not (finished or
    not found), 2 on a usage or Redis error."""
    if not job_ids:
        error("cancel", "give one or more job ids")
        return 2
    try:
        out = asyncio.run(_run(job_ids, resolve_redis_url(redis_url)))
    except CLIENT_ERRORS as e:
        error("cancel", e)
        return 2
    for r in out:
        print(json.dumps(r.to_wire()) if as_json else f"{r.job_id}: {SAID[r.state]}")
    return 0 if all(r.state in ("cancelled", "cancelling") for r in out) else 1
