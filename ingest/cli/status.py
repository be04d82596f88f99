"""``poolq status``: job counts, results of given jobs, reindex progress, worker heartbeats."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from poolq.ingest.cli.command_env import CLIENT_ERRORS, OutageNotice, error, resolve_redis_url
from poolq.ingest.client import PoolqClient
from poolq.ingest.client_reads import StatusReport


def format_reindex(r: dict[str, Any]) -> str:
    kind = "full rebuild" if r.get("full") else "incremental"
    line = f"{r.get('collection')!r} from {r.get('source')} ({kind}): {r.get('state')}"
    counts = ", ".join(
        f"{r[k]} {k.replace('_', ' ')}"
        for k in ("new", "changed", "stale", "metadata_only", "unchanged", "removed")
        if k in r
    )
    if counts:
        line += f"; {counts}"
    if r.get("to_encode"):
        line += f"; encoded {r.get('done', 0)}/{r['to_encode']}"
    if r.get("listed"):  # a bucket's prefix
        line += (
            f"; listed {r['listed']}, fetched {r.get('fetched', 0)}, parsed {r.get('parsed', 0)}"
        )
    if r.get("error"):
        line += f"; error: {r['error']}"
    if r.get("updated_at"):
        line += f" ({time.time() - r['updated_at']:.0f}s ago)"
    return line


STATUS_JSON = (
    'one line, one object: {"counts": {"queued", "running", "done", "failed", "deferred", '
    '"not_found", and with job ids "refused": ingest jobs whose every document was refused '
    '(without job ids they count as done) and "cancelled" (see poolq cancel)}, "jobs": [{"job_id", "status", "result", "error"}] '
    "(the given jobs; [] "
    'without), "workers": a list of heartbeat records, "reindex": a list of progress records, '
    '"workers_alive": n, "last_heartbeat_age_s": seconds since a worker was last seen (null: '
    "never)}."
)


def counts_line(c: dict[str, int]) -> str:
    line = f"jobs: {c['queued']} queued, {c['running']} running, {c['done']} done, "
    line += f"{c['failed']} failed"
    extra = [
        f"{c[k]} {k.replace('_', ' ')}"
        for k in ("refused", "cancelled", "deferred", "not_found")
        if c.get(k)
    ]
    return line + (f" ({', '.join(extra)})" if extra else "")


def workers_line(alive: int, age_s: float | None) -> str:
    if alive:
        return f"{alive} worker{'s' if alive > 1 else ''} alive"
    if age_s is None:
        return "no worker alive: none has sent a heartbeat to this Redis"
    return f"no worker alive (last heartbeat {age_s:.0f}s ago)"


def format_worker(w: dict[str, Any]) -> str:
    engines = ", ".join(
        f"{Path(str(m)).name}: {e.get('batches', 0)} batches, "
        f"{e.get('mean_batch_tokens', 0)} tokens/batch"
        for m, e in (w.get("engines") or {}).items()
        if isinstance(e, dict)
    )
    seen = w.get("seen_at")
    state = "stopped" if w.get("stopped") else (
        f"seen {time.time() - seen:.0f}s ago" if isinstance(seen, int | float) else "seen"
    )  # fmt: skip
    if w.get("role") == "parse":
        return (
            f"parse worker {w.get('worker_id')} ({state}): {w.get('jobs_done', 0)} jobs, "
            f"{w.get('files_parsed', 0)} files parsed"
        )
    return (
        f"worker {w.get('worker_id')} ({state}): {w.get('jobs_done', 0)} jobs, "
        f"{w.get('points_written', 0)} points; {engines}"
    )


def run_status(
    job_ids: list[str], redis_url: str | None, as_json: bool, outage_limit_s: float | None = None
) -> int:
    async def go() -> StatusReport:
        url = resolve_redis_url(redis_url)
        async with PoolqClient(url, redis_outage_limit_s=outage_limit_s) as client:
            said = OutageNotice("status", url, client.redis_outage_limit_s)
            return await client.status(job_ids, on_outage=said)

    try:
        st = asyncio.run(go())
    except CLIENT_ERRORS as exc:
        error("status", exc)
        return 2
    # the records as maps, here at the edge: the JSON is the command's contract
    out = st.to_json(with_jobs=bool(job_ids))
    if as_json:
        print(json.dumps(out))
        return 0
    print(counts_line(st.counts))
    for o in out["jobs"]:
        detail = json.dumps(o["result"]) if o["result"] is not None else (o["error"] or "")
        print(f"  {o['job_id']}  {o['status']:9s} {detail}")
    for r in out["reindex"]:
        print(f"reindex {format_reindex(r)}")
    print(workers_line(st.workers_alive, st.last_heartbeat_age_s))
    for w in out["workers"]:
        print(format_worker(w))
    return 0
