"""What a parse worker holds: its pool of parse children and the counters its heartbeat
reports. The parse role's counterpart of :class:`~poolq.worker.runtime.worker_runtime.Runtime`, with
the attributes the job guard, the reaper and the heartbeat read (``worker_id``, the job
counters, ``run_locks``, ``admission``), and no models, engine or store."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from poolq.wire.records.heartbeat import Heartbeat, WorkerLimits
from poolq.worker.config.parse_settings import ParseSettings
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.sandbox import ParsePool
from poolq.worker.runtime.worker_identity import heartbeat_of, new_worker_id


def parse_limits(settings: ParseSettings) -> ParseLimits:
    return ParseLimits(
        max_file_bytes=settings.max_file_bytes,
        timeout_s=settings.parse_timeout_s,
        memory_mb=settings.parse_memory_mb,
        ocr=settings.ocr,
    )


@dataclass
class ParseRuntime:
    settings: ParseSettings
    pool: ParsePool
    worker_id: str = field(default_factory=lambda: new_worker_id("parse"))
    started_at: float = field(default_factory=time.time)
    jobs_done: int = 0
    jobs_failed: int = 0
    jobs_retried: int = 0
    files_parsed: int = 0
    redis: Any = None
    admission: Any = None  # parse jobs are taken by count (parse_max_jobs), not engine capacity
    run_locks: Any = None

    @classmethod
    def open(cls, settings: ParseSettings) -> ParseRuntime:
        pool = ParsePool(settings.parse_workers, parse_limits(settings), settings.parse_child)
        return cls(settings, pool)

    def heartbeat(self) -> Heartbeat:
        return heartbeat_of(
            self,
            limits=WorkerLimits(max_file_bytes=self.settings.max_file_bytes),
            role="parse",
            files_parsed=self.files_parsed,
        )

    async def close(self) -> None:
        await self.pool.close()
