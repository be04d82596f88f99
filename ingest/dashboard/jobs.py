"""The dashboard's jobs: a bounded list (``GET /api/jobs``) and one job's page
(``GET /api/jobs/{id}``), from the job index, arq's queues and the records beside each job:
its :class:`~poolq.wire.records.job_info.JobInfo` (collection, lane), its progress, its try
count (arq's retry counter) and its outcome. A list reads at most ``MAX_CANDIDATES`` jobs,
whatever the number queued or finished: the newest finished, the running, the first queued."""

from __future__ import annotations

import contextlib
from typing import Any

from arq.constants import job_key_prefix, result_key_prefix, retry_key_prefix
from arq.jobs import deserialize_job, deserialize_result

from poolq.ingest.client_reads import job_json
from poolq.ingest.job_index import JobOutcome, outcomes, read_finished
from poolq.ingest.job_progress import read_progress
from poolq.wire import constants
from poolq.wire.records.job_info import JobInfo, job_info_key
from poolq.wire.records.record import WireError
from poolq.wire.serialization import deserialize, redis_text

FINISHED = {
    "done": constants.JOB_INDEX_DONE_KEY,
    "failed": constants.JOB_INDEX_FAILED_KEY,
    "cancelled": constants.JOB_INDEX_CANCELLED_KEY,
}
STATUS_FILTERS = ("", "queued", "running", *FINISHED)
MAX_CANDIDATES = 1000  # jobs a list looks at, at most (filters apply among them)
MAX_LIMIT = 500
DOCUMENTS_SHOWN = 1000  # of one job's page


async def _running(redis: Any, live: list[str]) -> list[str]:
    if not live:
        return []
    keys = [constants.WORKER_JOBS_KEY.format(worker_id=w) for w in live]
    return sorted(redis_text(j) for j in await redis.sunion(keys))


async def _candidates(
    redis: Any, status: str, n: int, now: float, live: list[str]
) -> list[tuple[str, str]]:
    """(job id, status) of at most ``n`` jobs of ``status`` ("" for any)."""
    out: list[tuple[str, str]] = []
    running = await _running(redis, live) if status in ("", "running") else []
    out += [(j, "running") for j in running[:n]]
    if status in ("", "queued"):
        busy = set(running) if status == "" else set(await _running(redis, live))
        for q in (constants.INGEST_QUEUE, constants.PARSE_QUEUE):
            ids = [redis_text(j) for j in await redis.zrange(q, 0, n + len(busy))]
            out += [(j, "queued") for j in ids if j not in busy]
    cutoff = now - constants.JOB_INDEX_TTL_S
    finished: list[tuple[float, str, str]] = []
    for name, key in FINISHED.items():
        if status in ("", name):
            rows = await redis.zrevrangebyscore(
                key, "+inf", cutoff, start=0, num=n, withscores=True
            )
            finished += [(float(s), redis_text(j), name) for j, s in rows]
    out += [(j, st) for _, j, st in sorted(finished, reverse=True)]
    return out[: max(n, 0)]


async def rows(
    redis: Any,
    job_ids: list[tuple[str, str]],
    *,
    now: float,
) -> list[dict[str, Any]]:
    """Each job's row: ``job_id``, ``status``, ``info`` (its JobInfo map, or null),
    ``progress`` (its progress record's map, or null), ``tries``, ``stalled_s`` (a running
    job: seconds since its progress last moved), ``outcome`` (a finished job's map as in
    ``poolq status --json``, with its error ``code``)."""
    ids = [j for j, _ in job_ids]
    if not ids:
        return []
    infos = await redis.mget([job_info_key(j) for j in ids])
    tries = await redis.mget([retry_key_prefix + j for j in ids])
    progress = await read_progress(redis, ids)
    ended = [j for j, st in job_ids if st in FINISHED]
    finished = await read_finished(redis, ended) if ended else {}
    out = []
    for (job_id, status), raw_info, raw_try in zip(job_ids, infos, tries, strict=True):
        info = None
        if raw_info:
            with contextlib.suppress(WireError):
                info = JobInfo.unpack(raw_info)
        rec = progress.get(job_id)
        outcome = finished.get(job_id)
        stalled = None
        if status == "running" and rec is not None and rec.updated_at:
            stalled = round(max(0.0, now - rec.updated_at), 1)
        out.append(
            {
                "job_id": job_id,
                "status": outcome.status if outcome is not None else status,
                "info": info.to_wire() if info is not None else None,
                "progress": rec.to_wire() if rec is not None else None,
                # arq's try counter lives while the job does (None: not known any more)
                "tries": int(raw_try) if raw_try else (0 if status == "queued" else None),
                "stalled_s": stalled,
                "outcome": _outcome_json(outcome) if outcome is not None else None,
            }
        )
    return out


def _outcome_json(o: JobOutcome) -> dict[str, Any]:
    return job_json(o) | {"code": o.code.value if o.code is not None else None}


def matches(row: dict[str, Any], collection: str, lane: str) -> bool:
    info = row["info"] or {}
    if collection and info.get("collection") != collection:
        return False
    return not lane or info.get("priority") == lane


async def list_jobs(
    redis: Any,
    *,
    status: str = "",
    collection: str = "",
    lane: str = "",
    limit: int = 50,
    now: float,
    live: list[str],
) -> list[dict[str, Any]]:
    """At most ``limit`` jobs' rows (see :func:`rows`), running first, then queued in queue
    order, then the newest finished; filtered by ``collection`` and ``lane`` among at most
    :data:`MAX_CANDIDATES` jobs. ``ValueError`` for an unknown status."""
    if status not in STATUS_FILTERS:
        raise ValueError(f"status: expected one of {', '.join(s for s in STATUS_FILTERS if s)}")
    limit = max(1, min(MAX_LIMIT, limit))
    n = MAX_CANDIDATES if (collection or lane) else limit
    found = await _candidates(redis, status, n, now, live)
    out = [r for r in await rows(redis, found, now=now) if matches(r, collection, lane)]
    return out[:limit]


async def _run_ms(redis: Any, job_id: str) -> int | None:
    """How long a finished job ran (arq's result), in milliseconds (None: not known)."""
    raw = await redis.get(result_key_prefix + job_id)
    if raw is None:
        return None
    try:
        res = deserialize_result(raw, deserializer=deserialize)
    except Exception:
        return None
    return round((res.finish_time - res.start_time).total_seconds() * 1000)


def _documents(args: Any, result: Any) -> list[dict[str, Any]]:
    """A job's documents (id, characters or file bytes, and its error if it was refused)."""
    docs = args[1] if isinstance(args, list | tuple) and len(args) > 1 else []
    if not isinstance(docs, list):
        return []
    errors: dict[str, dict[str, Any]] = {}
    if isinstance(result, dict):
        for e in result.get("errors") or []:
            if isinstance(e, dict):
                errors[str(e.get("id"))] = {"error": str(e.get("error", "")), "code": e.get("code")}
    shown = []
    for d in docs[:DOCUMENTS_SHOWN]:
        if not isinstance(d, dict):
            continue
        doc_id = str(d.get("id", ""))
        size = len(d["text"]) if isinstance(d.get("text"), str) else len(d.get("bytes") or b"")
        err = errors.get(doc_id) or {}
        shown.append(
            {"id": doc_id, "size": size, "error": err.get("error"), "code": err.get("code")}
        )
    return shown


async def job_detail(redis: Any, job_id: str, *, now: float) -> dict[str, Any] | None:
    """One job's page (``GET /api/jobs/{id}``): its row, its documents (the first
    :data:`DOCUMENTS_SHOWN`), and its timings: queued and run seconds (arq's) and the
    stages' milliseconds: parse (a parse job's run, or for the ingest jobs it handed on, ids
    ``{parse job}.encode{n}``, their parse job's), chunk, encode and write (the job's progress
    record). None: no such job."""
    (o,) = await outcomes(redis, [job_id], queue_name=constants.INGEST_QUEUE)
    status = o.status if o.status not in ("deferred",) else "queued"
    (row,) = await rows(redis, [(job_id, status)], now=now)
    if o.status in ("done", "failed", "cancelled", "refused"):
        row["outcome"] = _outcome_json(o)
    row["status"] = o.status
    docs: list[dict[str, Any]] = []
    timings: dict[str, Any] = {}
    raw = await redis.get(result_key_prefix + job_id)
    if raw is not None:
        with contextlib.suppress(Exception):
            res = deserialize_result(raw, deserializer=deserialize)
            docs = _documents(res.args, res.result if res.success else None)
            row["tries"] = res.job_try
            timings["queued_s"] = round((res.start_time - res.enqueue_time).total_seconds(), 3)
            timings["run_s"] = round((res.finish_time - res.start_time).total_seconds(), 3)
            if res.function == constants.PARSE_JOB:
                timings["parse_ms"] = round(timings["run_s"] * 1000)
    else:
        raw = await redis.get(job_key_prefix + job_id)
        if raw is not None:
            with contextlib.suppress(Exception):
                docs = _documents(deserialize_job(raw, deserializer=deserialize).args, None)
    if ".encode" in job_id and "parse_ms" not in timings:
        timings["parse_ms"] = await _run_ms(redis, job_id.rsplit(".encode", 1)[0])
    prog = row["progress"] or {}
    for stage in ("chunk", "encode", "write"):
        timings[f"{stage}_ms"] = prog.get(f"{stage}_ms")
    if o.status == "not_found" and row["info"] is None and not docs:
        return None
    return row | {"documents": docs, "timings": timings}
