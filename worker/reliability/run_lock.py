"""One run at a time per job (``JOB_RUN_LOCK_KEY``).

The reaper hands back the jobs of a worker it believes dead. Should that worker still be alive
(a stalled process, a network split), the job would run twice at once. So each run takes the
job's run lock first: ``SET NX`` with the worker id and a token of the run, expiring after
``JOB_RUN_LOCK_TTL_S`` unless the worker's heartbeat thread refreshes it. A run that finds the
lock held waits for it; when the holder finishes, the waiting run returns the holder's recorded
outcome instead of running the job again, and when the holder dies (its lock expires) the
waiting run takes over.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from typing import Any

from poolq.wire import constants

log = logging.getLogger("poolq.jobs")

# compare-and-delete / compare-and-expire: only the run that holds the lock may touch it
_RELEASE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)
_REFRESH = (
    "local v = redis.call('get', KEYS[1]) "
    "if v == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end "
    "if not v then return redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) and 1 or 0 end "
    "return 0"
)
# take the lock and, once taken, list the job under its worker (KEYS[2], if given): one round
# trip where two were (a job waiting for another run is not listed as running here)
_ACQUIRE = (
    "if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end "
    "if KEYS[2] then redis.call('sadd', KEYS[2], ARGV[3]) end return 1"
)
WAIT_POLL_S = 0.5


def lock_key(job_id: str) -> str:
    return constants.JOB_RUN_LOCK_KEY.format(job_id=job_id)


class RunLocks:
    """The run locks this worker holds (its heartbeat thread refreshes them)."""

    def __init__(self, worker_id: str) -> None:
        self.worker_id = worker_id
        self._held: dict[str, str] = {}  # job id -> lock value
        self._mutex = threading.Lock()
        self.ttl_ms = int(constants.JOB_RUN_LOCK_TTL_S * 1000)

    def held(self) -> dict[str, str]:
        with self._mutex:
            return dict(self._held)

    async def acquire(self, redis: Any, job_id: str, running_key: str | None = None) -> bool:
        """Take the job's lock; once taken, add the job to the set ``running_key`` (the jobs
        running under this worker, ``WORKER_JOBS_KEY``) in the same call."""
        value = f"{self.worker_id}:{uuid.uuid4().hex[:8]}"
        keys = (lock_key(job_id),) if running_key is None else (lock_key(job_id), running_key)
        if not await redis.eval(_ACQUIRE, len(keys), *keys, value, self.ttl_ms, job_id):
            return False
        with self._mutex:
            self._held[job_id] = value
        return True

    async def holder(self, redis: Any, job_id: str) -> str | None:
        raw = await redis.get(lock_key(job_id))
        return raw.decode() if isinstance(raw, bytes) else raw

    async def release(self, redis: Any, job_id: str) -> None:
        with self._mutex:
            value = self._held.pop(job_id, None)
        if value is not None:
            await redis.eval(_RELEASE, 1, lock_key(job_id), value)

    def add_release(self, pipe: Any, job_id: str) -> None:
        """Queue the release of the job's lock on ``pipe`` (with the job's other last writes);
        the lock counts as released here at once (else it expires)."""
        with self._mutex:
            value = self._held.pop(job_id, None)
        if value is not None:
            pipe.eval(_RELEASE, 1, lock_key(job_id), value)

    def refresh(self, redis_sync: Any) -> None:
        """From the heartbeat thread (a synchronous client): extend every held lock, and put
        back one that a Redis restart lost (unless another run took it meanwhile)."""
        for job_id, value in self.held().items():
            if not redis_sync.eval(_REFRESH, 1, lock_key(job_id), value, self.ttl_ms):
                log.warning(
                    "job %s: its run lock is held by another run now (%s)",
                    job_id,
                    redis_sync.get(lock_key(job_id)),
                )

    async def wait_turn(self, redis: Any, job_id: str, finished: Any) -> bool:
        """Wait while another run holds the lock. True once this run holds it (the other run
        died, or ended without an outcome: this one runs the job); False once ``finished()``
        (an awaitable factory) says the other run recorded the job's outcome."""
        while True:
            if await finished():
                return False
            if await self.acquire(redis, job_id):
                return True
            await asyncio.sleep(WAIT_POLL_S)
