"""The job index behind ``poolq status`` (part of :mod:`poolq.ingest.client`).

Every job a client enqueues is recorded in a sorted set scored by its enqueue time
(:data:`~poolq.worker.wire.constants.JOB_INDEX_ZSET_KEY`), trimmed to the last
:data:`~poolq.worker.wire.constants.JOB_INDEX_TTL_S` (arq's result TTL: an older job has no
result left to report) on every enqueue and every status.

Status reads jobs a thousand at a time, one script call per thousand (never a round trip per
job; a script, so each chunk is read atomically, as arq's own ``Job.status`` reads one job in
a MULTI). The jobs it sees finished move to a done or a failed set (same score, same
trimming), so each finished job is read once and later counts of them are a ZCARD: the cost of
a status grows with the jobs not yet seen finished, not with every job of the day.

An arq result holds the job's arguments, the documents of an ingest job: reading whole results
would move the corpus. Only a result's tail is read: arq writes the outcome after the arguments
(``... "s": success, "r": result, "st", "ft", "q", "id"``), so the tail holds all that status
reports. A tail that does not parse back to exactly those fields, ending with the job's own id,
is read again in full: a change in arq's layout costs time, never accuracy.

The scripts build arq's keys from the job ids, as arq itself does: a single Redis (>= 6.2, with
its built-in ``cmsgpack``), not a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack
from arq.constants import in_progress_key_prefix, result_key_prefix
from arq.jobs import deserialize_result
from arq.utils import timestamp_ms

from poolq.worker.wire import constants
from poolq.worker.wire.serialization import deserialize, error_info

CHUNK = 1000  # job ids per script call
RESULT_TAIL_BYTES = 1024  # what is read of each result (see the module docstring)
STATUSES = ("queued", "running", "done", "failed", "not_found", "deferred")
_OPEN = constants.JOB_INDEX_ZSET_KEY
_ZSETS = (_OPEN, constants.JOB_INDEX_DONE_KEY, constants.JOB_INDEX_FAILED_KEY)
_FINISHED = {"done": constants.JOB_INDEX_DONE_KEY, "failed": constants.JOB_INDEX_FAILED_KEY}
# msgpack: fixstr "s", a bool (c2 false, c3 true), fixstr "r" (also in _CLASSIFY_LUA)
_OUTCOME_MARK = re.compile(rb"\xa1s[\xc2\xc3]\xa1r")
_TAIL_KEYS = {"s", "r", "st", "ft", "q", "id"}

# KEYS[1]: the arq queue. ARGV: now (ms), tail bytes, result key prefix, in-progress key
# prefix, the job ids (one msgpack array). Returns {codes, data}: a code per job, and for each
# finished one (T, W) what of its result to parse. T: the result's tail from its last outcome
# mark on; W: a short result with no mark, whole; X: a long one whose tail has no mark (to be
# read in full); R: running; Q: queued; D: deferred; N: no record.
_CLASSIFY_LUA = r"""
local queue, now, tail = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local result_prefix, running_prefix = ARGV[3], ARGV[4]
local ids = cmsgpack.unpack(ARGV[5])
local marks = {'\161s\195\161r', '\161s\194\161r'}
local codes, data = {}, {}
for i = 1, #ids do
  local id = ids[i]
  local key = result_prefix .. id
  local size = redis.call('STRLEN', key)
  local code
  if size > 0 then
    local t = redis.call('GETRANGE', key, -tail, -1)
    local at = nil
    for _, mark in ipairs(marks) do
      local from = 1
      while true do
        local found = string.find(t, mark, from, true)
        if not found then break end
        if not at or found > at then at = found end
        from = found + 1
      end
    end
    if at then
      code = 'T'
      data[#data + 1] = string.sub(t, at)
    elseif size <= tail then
      code = 'W'
      data[#data + 1] = t
    else
      code = 'X'
    end
  elseif redis.call('EXISTS', running_prefix .. id) == 1 then
    code = 'R'
  else
    local score = redis.call('ZSCORE', queue, id)
    if not score then
      code = 'N'
    elseif tonumber(score) > now then
      code = 'D'
    else
      code = 'Q'
    end
  end
  codes[i] = code
end
return {table.concat(codes), data}
"""

# KEYS: the index, the done set, the failed set. ARGV: done ids, failed ids (msgpack arrays).
# Each id still in the index moves to its set with its score.
_FILE_LUA = r"""
for k = 1, 2 do
  for _, id in ipairs(cmsgpack.unpack(ARGV[k])) do
    local score = redis.call('ZSCORE', KEYS[1], id)
    if score then
      redis.call('ZADD', KEYS[k + 1], score, id)
      redis.call('ZREM', KEYS[1], id)
    end
  end
end
return 0
"""
_STATES = {"R": "running", "Q": "queued", "D": "deferred", "N": "not_found"}


@dataclass(frozen=True)
class JobOutcome:
    job_id: str
    status: str  # queued | deferred | running | done | failed | not_found
    result: dict[str, Any] | None = None
    error: str | None = None


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _text(member: bytes | str) -> str:
    return member.decode() if isinstance(member, bytes) else str(member)


def _pack_ids(ids: Sequence[bytes | str]) -> bytes:
    return msgpack.packb(list(ids), use_bin_type=False)  # raw strings: Lua's cmsgpack reads them


def _trim(pipe: Any, cutoff: float) -> None:
    for key in _ZSETS:
        pipe.zremrangebyscore(key, "-inf", f"({cutoff}")


async def index_jobs(
    redis: Any, job_ids: Sequence[str], *, now: float, ttl_s: float = constants.JOB_INDEX_TTL_S
) -> None:
    """Record ``job_ids`` as enqueued at ``now`` and drop entries older than ``ttl_s``: one
    pipeline. (Whatever enqueues jobs outside :class:`PoolqClient` should call this too.)"""
    if not job_ids:
        return
    async with redis.pipeline(transaction=False) as p:
        p.zadd(_OPEN, dict.fromkeys(job_ids, now))
        _trim(p, now - ttl_s)
        await p.execute()


def _outcome(job_id: str, success: bool, result: Any) -> JobOutcome:
    if success:
        return JobOutcome(job_id, "done", result)
    return JobOutcome(job_id, "failed", None, error_info(result) or str(result))


def finished_outcome(job_id: str, raw: bytes) -> JobOutcome:
    """A done or failed outcome from an arq result as stored (poolq's msgpack serializer)."""
    try:
        info = deserialize_result(raw, deserializer=deserialize)
    except Exception as e:  # not poolq's serializer (an arq worker using pickle, say)
        return JobOutcome(job_id, "failed", None, f"unreadable result ({type(e).__name__})")
    return _outcome(job_id, info.success, info.result)


def outcome_from_tail(job_id: str, tail: bytes) -> JobOutcome | None:
    """A done or failed outcome from the last bytes of an arq result, or None when they do not
    hold exactly ``"s": bool, "r": result, "st": int, "ft": int, "q": str, "id": job_id`` from
    an outcome mark to the very end. (The six pairs, given a map header, unpack as one map.)"""
    for mark in reversed(list(_OUTCOME_MARK.finditer(tail))):
        try:
            d = msgpack.unpackb(
                b"\x86" + tail[mark.start() :], raw=False, strict_map_key=False, use_list=True
            )
        except Exception:  # a false mark (cut short, or bytes left after the map)
            continue
        if (
            isinstance(d, dict)
            and d.keys() == _TAIL_KEYS
            and d["id"] == job_id
            and isinstance(d["s"], bool)
            and all(isinstance(d[k], int) for k in ("st", "ft"))
        ):
            return _outcome(job_id, d["s"], d["r"])
    return None


async def _classify(
    redis: Any, chunk: Sequence[bytes | str], queue_name: str
) -> tuple[str, dict[int, JobOutcome]]:
    """One script call: a code per job of ``chunk`` and the outcomes of the finished ones (by
    position), reading in full only results whose tail did not parse."""
    script = redis.register_script(_CLASSIFY_LUA)
    args = [timestamp_ms(), RESULT_TAIL_BYTES, result_key_prefix, in_progress_key_prefix]
    raw_codes, data = await script(keys=[queue_name], args=[*args, _pack_ids(chunk)])
    codes = _text(raw_codes)
    parts = iter(data)
    finished: dict[int, JobOutcome] = {}
    whole: list[int] = []  # where a result must be read in full
    for k, code in enumerate(codes):
        if code in _STATES:
            continue
        job_id = _text(chunk[k])
        o = None
        if code == "T":
            o = outcome_from_tail(job_id, next(parts))
        elif code == "W":
            o = finished_outcome(job_id, next(parts))
        if o is None:  # X, or a tail that did not parse
            whole.append(k)
        else:
            finished[k] = o
    if whole:
        raws = await redis.mget([result_key_prefix + _text(chunk[k]) for k in whole])
        for k, raw in zip(whole, raws, strict=True):
            job_id = _text(chunk[k])
            # (None: the result expired in between)
            finished[k] = JobOutcome(job_id, "not_found") if raw is None else (
                finished_outcome(job_id, raw)
            )  # fmt: skip
    return codes, finished


async def outcomes(redis: Any, job_ids: Sequence[str], *, queue_name: str) -> list[JobOutcome]:
    """The state of each job, in order, as arq's ``Job.status`` sees it (a result, else
    running, else in the queue), with results: one script call per thousand jobs."""
    out: list[JobOutcome] = []
    for chunk in chunks(job_ids):
        codes, finished = await _classify(redis, chunk, queue_name)
        for k, (job_id, code) in enumerate(zip(chunk, codes, strict=True)):
            out.append(finished.get(k) or JobOutcome(job_id, _STATES.get(code, "not_found")))
    return out


async def read_finished(
    redis: Any, job_ids: Sequence[str], *, queue_name: str = constants.INGEST_QUEUE
) -> dict[str, JobOutcome]:
    """The outcomes of the jobs among ``job_ids`` that are done or failed."""
    found: dict[str, JobOutcome] = {}
    for chunk in chunks(job_ids):
        _, finished = await _classify(redis, chunk, queue_name)
        found |= {o.job_id: o for o in finished.values() if o.status in _FINISHED}
    return found


async def migrate_legacy_index(redis: Any, *, now: float, queue_name: str) -> int:
    """Move the ids of the old plain set (:data:`LEGACY_JOB_INDEX_KEY`) into the sorted set,
    scored ``now`` (their enqueue time is unknown), dropping those whose records are gone.
    SPOP in chunks, so ids added meanwhile are kept for the next call. Returns ids moved."""
    moved = 0
    while True:
        if _text(await redis.type(constants.LEGACY_JOB_INDEX_KEY)) != "set":
            return moved  # absent (or, unexpectedly, not a set: left alone)
        ids = [_text(x) for x in await redis.spop(constants.LEGACY_JOB_INDEX_KEY, CHUNK) or []]
        if not ids:
            return moved
        found = await outcomes(redis, ids, queue_name=queue_name)
        live = [o.job_id for o in found if o.status != "not_found"]
        if live:
            await redis.zadd(_OPEN, dict.fromkeys(live, now), nx=True)
        moved += len(live)


async def index_status(
    redis: Any, *, queue_name: str, now: float, ttl_s: float, limit: int
) -> tuple[dict[str, int], list[JobOutcome]]:
    """Counts of every indexed job younger than ``ttl_s`` and the outcomes of the newest
    ``limit`` of them (newest first). Trims the index and files the jobs found finished (see
    the module docstring)."""
    await migrate_legacy_index(redis, now=now, queue_name=queue_name)
    async with redis.pipeline(transaction=True) as tr:
        _trim(tr, now - ttl_s)
        tr.zrange(_OPEN, 0, -1)
        *_, open_ids = await tr.execute()
    counts = dict.fromkeys(STATUSES, 0)
    file_script = redis.register_script(_FILE_LUA)
    for chunk in chunks(open_ids):
        codes, finished = await _classify(redis, chunk, queue_name)
        for code, status in _STATES.items():
            counts[status] += codes.count(code)
        moves: dict[str, list[str]] = {"done": [], "failed": []}
        for o in finished.values():
            if o.status in moves:
                moves[o.status].append(o.job_id)
            else:
                counts[o.status] += 1  # (a result gone since the tail was read)
        if moves["done"] or moves["failed"]:
            await file_script(
                keys=[_OPEN, _FINISHED["done"], _FINISHED["failed"]],
                args=[_pack_ids(moves["done"]), _pack_ids(moves["failed"])],
            )
    async with redis.pipeline(transaction=False) as p:
        p.zcard(_FINISHED["done"])
        p.zcard(_FINISHED["failed"])
        for key in _ZSETS:
            p.zrevrange(key, 0, max(0, limit - 1), withscores=True)
        counts["done"], counts["failed"], *newest = await p.execute()
    listing: list[JobOutcome] = []
    if limit > 0:
        newest_first = {_text(m): s for rows in newest for m, s in rows}
        merged = sorted(newest_first.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        listing = await outcomes(redis, [j for j, _ in merged], queue_name=queue_name)
    return counts, listing
