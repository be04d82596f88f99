"""The worker's heartbeat, from a thread of its own with a Redis connection of its own.

A worker is alive as long as its heartbeat key (``HEARTBEAT_KEY``, expiring after
``HEARTBEAT_TTL_S``) is there; other workers' reapers hand back the jobs of a worker without one.
Beating from the event loop let a busy loop (a long synchronous step, the GIL held by a
neighbour thread) or a busy core starve the beat past its expiry: the worker was declared dead
while it ran, and its jobs ran twice. This thread needs only a few milliseconds of CPU every
``HEARTBEAT_INTERVAL_S``, blocks on nothing the event loop or the compute thread hold, and also
refreshes the run locks of the jobs the worker is running (``run_lock.py``) and, every
``SERIES_STEP_S``, the dashboard's time series (``observability/series.py``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import redis as redis_sync

from poolq.wire import constants
from poolq.wire.connection import redact_text
from poolq.wire.records.heartbeat import Heartbeat
from poolq.worker.observability.series import SeriesWriter
from poolq.worker.reliability.run_lock import RunLocks

log = logging.getLogger("poolq.worker")


class HeartbeatThread:
    def __init__(
        self,
        redis_url: str,
        worker_id: str,
        payload: Callable[[], Heartbeat],
        locks: RunLocks | None = None,
        *,
        interval_s: float = constants.HEARTBEAT_INTERVAL_S,
        ttl_s: float = constants.HEARTBEAT_TTL_S,
        series: SeriesWriter | None = None,
    ) -> None:
        self.series = series
        self.key = constants.HEARTBEAT_KEY.format(worker_id=worker_id)
        self.payload = payload
        self.locks = locks
        self.interval_s = interval_s
        self.ttl_s = ttl_s
        timeout = max(0.5, min(2.0, interval_s))
        self._redis = redis_sync.Redis.from_url(
            redis_url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="poolq-heartbeat", daemon=True)
        self.beats = 0
        self._failing_since: float | None = None

    def start(self) -> HeartbeatThread:
        self.beat()  # the first one before any job is taken
        self._thread.start()
        return self

    def stop(self, final: Heartbeat | None = None) -> None:
        """Stop beating; ``final``: one last payload, kept longer (``poolq status`` shows a
        stopped worker for a while)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.interval_s + 3)
        if final is not None:
            try:
                self._redis.set(self.key, final.pack(), ex=int(self.ttl_s * 20))
            except Exception as e:
                log.warning("could not write the final heartbeat: %s", redact_text(str(e)))
        self._redis.close()

    def beat(self) -> bool:
        """One beat (and the run locks' refresh); False when Redis did not take it."""
        try:
            payload = self.payload()
            self._redis.set(self.key, payload.pack(), ex=int(self.ttl_s))
            if self.series is not None:
                self.series.after_beat(self._redis, payload)
            if self.locks is not None:
                self.locks.refresh(self._redis)
        except Exception as e:  # Redis restarting: the next beat will do
            if self._failing_since is None:
                self._failing_since = time.monotonic()
                log.warning("heartbeat: Redis did not answer (%s)", redact_text(str(e)))
            return False
        if self._failing_since is not None:
            log.info("heartbeat: Redis is back after %.1fs", time.monotonic() - self._failing_since)
            self._failing_since = None
        self.beats += 1
        return True

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.beat()
