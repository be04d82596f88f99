"""``poolq dlq list|retry|drop``: the dead-letter list (jobs that failed for good)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from poolq.ingest.cli.command_env import CLIENT_ERRORS, error, resolve_redis_url
from poolq.wire.records.dead_letter import DeadLetter


def _args_summary(e: DeadLetter) -> str:
    shown = [f"[{len(a)} items]" if isinstance(a, list) else repr(a) for a in e.args]
    return ", ".join(t if len(t) <= 40 else t[:39] + "…" for t in shown)


async def _run(action: str, job_ids: list[str] | None, redis_url: str) -> Any:
    from poolq.ingest.client import PoolqClient

    async with PoolqClient(redis_url) as client:
        if action == "list":
            return await client.dead_letters()
        if action == "retry":
            return await client.dlq_retry(job_ids)
        return await client.dlq_drop(job_ids)


DLQ_JSON = (
    "JSON lines, one object per line: list: an entry {job_id, function, args, kwargs, error, "
    "tries, failed_at, code} per dead-lettered job (oldest first; none: no lines); retry: "
    "{job_id, new_job_id} per job enqueued again; drop: {job_id} per job dropped."
)


def json_lines(action: str, out: Any) -> list[dict[str, Any]]:
    if action in ("list", "retry"):  # DeadLetter, DlqRetried: their maps are the lines
        return [record.to_wire() for record in out]
    return [{"job_id": job_id} for job_id in out]


def run_dlq(
    action: str, job_ids: list[str], all_: bool, redis_url: str | None, as_json: bool
) -> int:
    if action not in ("list", "retry", "drop"):
        error("dlq", f"expected list, retry or drop, got {action!r}")
        return 2
    if action != "list" and not job_ids and not all_:
        error(f"dlq {action}", "give job ids, or --all")
        return 2
    try:
        out = asyncio.run(_run(action, None if all_ else job_ids, resolve_redis_url(redis_url)))
    except KeyError as e:
        error(f"dlq {action}", e.args[0])
        return 1
    except CLIENT_ERRORS as e:
        error(f"dlq {action}", e)
        return 2
    if as_json:
        for line in json_lines(action, out):
            print(json.dumps(line))
        return 0
    if action == "list":
        if not out:
            print("the dead-letter list is empty")
        for entry in out:
            age = time.time() - entry.failed_at
            print(
                f"{entry.job_id}  {entry.function}({_args_summary(entry)})  "
                f"tries {entry.tries}, {age:.0f}s ago: {entry.error}"
            )
    elif action == "retry":
        for retried in out:
            print(f"{retried.job_id} -> enqueued again as {retried.new_job_id}")
    else:
        for job_id in out:
            print(f"{job_id} dropped")
    return 0
