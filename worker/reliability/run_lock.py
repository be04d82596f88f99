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

    async def acquire(self, redis: Any, job_id: str) -> bool:
        value = f"{self.worker_id}:{uuid.uuid4().hex[:8]}"
        if not await redis.set(lock_key(job_id), value, nx=True, px=self.ttl_ms):
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
