"""What a parse worker holds: its file reader (its parse children, the folders and URIs it may
read) and the counters its heartbeat reports. The parse role's counterpart of
:class:`~poolq.worker.runtime.worker_runtime.Runtime`, with the attributes the job guard, the
reaper and the heartbeat read (``worker_id``, the job counters, ``run_locks``, ``admission``),
and no models, engine or store."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from poolq.wire.records.heartbeat import Heartbeat, WorkerLimits
from poolq.worker.config.parse_settings import ParseSettings
from poolq.worker.parse.file_reader import FileReader
from poolq.worker.runtime.worker_identity import heartbeat_of, new_worker_id


@dataclass
class ParseRuntime:
    settings: ParseSettings
    reader: FileReader  # its parse children, its roots and allowed URIs
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
        return cls(settings, FileReader.open(settings))

    def heartbeat(self) -> Heartbeat:
        return heartbeat_of(
            self,
            limits=WorkerLimits(max_file_bytes=self.settings.max_file_bytes),
            role="parse",
            files_parsed=self.files_parsed,
        )

    async def close(self) -> None:
        await self.reader.close()
