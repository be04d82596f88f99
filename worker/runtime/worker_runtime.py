"""What a worker process holds open for its jobs: settings, the vectorizer (models + engines),
and the single Qdrant writer. Built in arq's ``on_startup`` and closed in ``on_shutdown``."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from poolq.sinks.schema import CollectionSchema
from poolq.sinks.writer import QdrantWriter
from poolq.wire.records.heartbeat import Heartbeat, WorkerLimits
from poolq.worker.config.settings import Settings
from poolq.worker.engine.execution.thread_names import name_os_thread
from poolq.worker.runtime.admission import Admission, default_bound
from poolq.worker.runtime.collection_fields import RecentFields
from poolq.worker.runtime.query import QueryService
from poolq.worker.runtime.schedule_report import ScheduleReport
from poolq.worker.runtime.vectorizer import Vectorizer
from poolq.worker.runtime.worker_identity import (
    engines_device,
    heartbeat_of,
    host_load,
    new_worker_id,
)

if TYPE_CHECKING:
    from poolq.worker.runtime.search_service import SearchService


def open_writer(settings: Settings) -> QdrantWriter:
    """The Qdrant writer the settings name: a server URL, else the embedded folder (Qdrant
    Edge, created if missing), by default served by a process of its own
    (``sinks/store/process.py``)."""
    if settings.qdrant_url:
        return QdrantWriter(
            url=settings.qdrant_url,
            api_key=settings.qdrant_api_key,
            transport=settings.qdrant_transport,
            grpc_port=settings.qdrant_grpc_port,
            writes_in_flight=settings.qdrant_writes_in_flight,
            thread_start=name_os_thread,
        )
    return QdrantWriter(
        path=settings.qdrant_path, store_process=settings.store_process, thread_start=name_os_thread
    )


@dataclass
class Runtime:
    settings: Settings
    vectorizer: Vectorizer
    writer: QdrantWriter
    worker_id: str = field(default_factory=new_worker_id)
    started_at: float = field(default_factory=time.time)
    jobs_done: int = 0
    jobs_failed: int = 0  # failed for good (dead-lettered)
    jobs_retried: int = 0  # failed transiently, sent back to the queue
    documents_done: int = 0  # documents ingest jobs wrote, and their chunks (the dashboard)
    chunks_done: int = 0
    search_service: SearchService | None = None
    redis: Any = None  # the worker's Redis (arq's pool), set at start-up; None outside a worker
    admission: Admission | None = None  # which jobs the worker may take now (set in open)
    run_locks: Any = None  # reliability.run_lock.RunLocks of the jobs it runs (set at start-up)
    recent_fields: RecentFields = field(default_factory=RecentFields)  # metadata keys recorded
    _queries: QueryService | None = None
    _schedule_report: ScheduleReport | None = None
    _collections: set[str] = field(default_factory=set)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @classmethod
    async def open(cls, settings: Settings, *, writer: QdrantWriter | None = None) -> Runtime:
        """Load the models and start the writer (``writer``: one built by the caller, e.g.
        around a client with fault injection in tests; it is started here)."""
        writer = writer or open_writer(settings)
        await writer.start()  # first: a folder it cannot open fails before any model loads
        try:
            vectorizer = await Vectorizer.start(
                settings.profile, device=settings.device, max_batch_tokens=settings.max_batch_tokens
            )
        except BaseException:
            await writer.stop()
            raise
        rt = cls(settings, vectorizer, writer)
        engines = list(vectorizer.engines.values())
        bound = settings.max_queued_tokens or default_bound(
            max(e.scheduler.max_batch_tokens for e in engines)
        )
        rt.admission = Admission(
            bound, lambda: max((e.scheduler.queued_tokens for e in engines), default=0)
        )
        return rt

    async def close(self) -> None:
        await self.vectorizer.stop()
        await self.writer.stop()

    async def ensure_collection(self, name: str) -> None:
        if name in self._collections:
            return
        async with self._lock:
            if name not in self._collections:
                await self.writer.ensure_collection(self.schema(name), behind_alias=True)
                self._collections.add(name)

    def schema(self, name: str) -> CollectionSchema:
        return CollectionSchema(
            name, tuple(self.vectorizer.vector_specs()), self.settings.profile.collection
        )

    def forget_collection(self, name: str) -> None:
        self._collections.discard(name)

    @property
    def queries(self) -> QueryService:
        if self._queries is None:
            self._queries = QueryService(self.vectorizer, self.writer, self.worker_id)
        return self._queries

    def heartbeat(self) -> Heartbeat:
        """What the heartbeat thread writes (``records/heartbeat.py``); models' precision and,
        for int8 models, the quality gate's figures at load."""
        engines = self.vectorizer.engines
        models = {m: e.model for m, e in engines.items()}
        budgets = [
            int(getattr(getattr(e, "scheduler", None), "max_batch_tokens", 0))
            for e in engines.values()
        ]
        return heartbeat_of(
            self,
            points_written=self.writer.points_written,
            write_calls=self.writer.write_calls,
            sink_retries=self.writer.retries,
            searches=self._queries.searches if self._queries else 0,
            engines={m: e.stats_snapshot() for m, e in engines.items()},
            query_engines={m: e.stats_snapshot(queries=True) for m, e in engines.items()},
            limits=self.limits(),
            precision={m: pm.precision for m, pm in models.items()},
            int8_quality={
                m: pm.int8_report.as_dict() for m, pm in models.items() if pm.int8_report
            },
            role=self.settings.role,
            documents_done=self.documents_done,
            chunks_done=self.chunks_done,
            device=engines_device(engines.values()),
            backend=self.settings.backend or "torch",
            max_batch_tokens=max(budgets, default=0) or None,
            host_load=host_load(),
            schedules=self.schedule_report().records(),
        )

    def schedule_report(self) -> ScheduleReport:
        if self._schedule_report is None:
            self._schedule_report = ScheduleReport(tuple(self.settings.reindex or ()))
        return self._schedule_report

    def limits(self) -> WorkerLimits:
        """What this worker refuses past (clients check before sending a job)."""
        s = self.settings
        return WorkerLimits(
            s.max_documents_per_job, s.max_document_bytes, s.max_job_bytes, s.max_file_bytes
        )
