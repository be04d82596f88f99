"""What the reaper (``reaper.py``) decides, without Redis: which workers are dead (confirmed
over ``REAP_CONFIRM_S``, never itself), which in-progress marks are orphaned, and whether a job
that died with its worker was on its last try. Pure functions of what the reaper read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from poolq.wire import constants
from poolq.wire.serialization import deserialize

ORPHAN_GRACE_S = 30.0  # a running job registers itself within milliseconds of being marked


@dataclass(frozen=True)
class WorkerJobs:
    """A worker's list of running jobs, and whether the worker still has a heartbeat."""

    worker_id: str
    alive: bool
    jobs: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Mark:
    """An arq in-progress mark: whether its job is still in the queue, and what is left of its
    expiry (``PTTL``: -1 without one, -2 gone)."""

    job_id: str
    queued: bool
    ttl_ms: int


@dataclass(frozen=True)
class LastTry:
    """A job that died on its last try: what its dead-letter entry records."""

    function: str
    args: list[Any]
    kwargs: dict[str, Any]
    tries: int


def worker_id_of(key: str) -> str:
    return key[len(constants.KEY_PREFIX + "worker-jobs:") :]


def dead_workers(lists: Iterable[WorkerJobs]) -> list[WorkerJobs]:
    """The job lists whose worker has no heartbeat: their jobs are handed back."""
    return [w for w in lists if not w.alive]


def orphaned_marks(
    marks: Iterable[Mark],
    lists: Iterable[WorkerJobs],
    in_progress_ttl_ms: int,
    grace_s: float = ORPHAN_GRACE_S,
) -> list[str]:
    """The marks to hand back: of jobs still queued, listed by no live worker, and set more
    than ``grace_s`` ago (arq sets them with ``in_progress_ttl_ms``, so their age is that
    minus what is left). A mark without an expiry, or gone, is left alone."""
    live = {j for w in lists if w.alive for j in w.jobs}
    out = []
    for m in marks:
        if m.job_id in live or not m.queued:
            continue
        if m.ttl_ms <= 0 or in_progress_ttl_ms - m.ttl_ms < grace_s * 1000:
            continue
        out.append(m.job_id)
    return out


def last_try(
    raw_try: bytes | None, raw_job: bytes | None, max_tries: Mapping[str, int]
) -> LastTry | None:
    """The job, if the try that died with its worker was its last (``raw_try`` and ``raw_job``
    are arq's retry counter and job payload). arq fails such a job on its next pick ("max
    retries exceeded") without running it: it goes to the dead-letter list first. None for a
    job with tries left, of a function without a limit, or unreadable."""
    if raw_try is None or raw_job is None:
        return None
    try:
        job = deserialize(raw_job)
        function, args, kwargs = job["f"], job["a"], job["k"]
        tries = int(raw_try)
    except Exception:
        return None
    if function in max_tries and tries >= max_tries[function]:
        return LastTry(function, args, kwargs, tries)
    return None


def confirmed_dead(
    lists: Iterable[WorkerJobs],
    suspects: dict[str, float],
    now: float,
    *,
    self_id: str | None = None,
    confirm_s: float = constants.REAP_CONFIRM_S,
) -> list[WorkerJobs]:
    """The dead workers whose heartbeat this reaper has seen missing, without a break, for
    ``confirm_s`` (``suspects``: worker id -> when first seen missing, kept across passes and
    updated here); never ``self_id``."""
    lists = list(lists)
    for w in lists:
        if w.alive:
            suspects.pop(w.worker_id, None)
    out = []
    for w in dead_workers(lists):
        if w.worker_id == self_id:
            continue
        first = suspects.setdefault(w.worker_id, now)
        if now - first >= confirm_s:
            out.append(w)
    gone = {w.worker_id for w in lists}
    for worker_id in [k for k in suspects if k not in gone]:
        del suspects[worker_id]  # its list is gone (handed back, or the worker ended)
    return out
