"""A worker's heartbeat: what it writes under ``HEARTBEAT_KEY`` every ``HEARTBEAT_INTERVAL_S``
(``worker/reliability/heartbeat.py``, built by ``Runtime.heartbeat()``), and what clients read
to know which workers are alive, their limits and stats (``poolq status``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from poolq.wire import constants
from poolq.wire.records.record import WireError, WireRecord


@dataclass(frozen=True)
class WorkerLimits(WireRecord):
    """What a worker refuses past (clients check a job against them before sending it)."""

    wire_name = "worker limits"

    max_documents_per_job: int = constants.MAX_DOCUMENTS_PER_JOB
    max_document_bytes: int = constants.MAX_DOCUMENT_BYTES
    max_job_bytes: int = constants.MAX_JOB_BYTES
    max_file_bytes: int = constants.MAX_FILE_BYTES


@dataclass(frozen=True)
class ScheduledReindex(WireRecord):
    """A reindex a worker runs on a schedule (``[[reindex]]`` in its config) and when it runs
    next (unix seconds, the worker's clock)."""

    wire_name = "scheduled reindex"

    collection: str
    source: str
    cron: str
    full: bool = False
    next_run: float | None = None


@dataclass(frozen=True)
class Heartbeat(WireRecord):
    """``engines``/``query_engines``: model -> its engine's stats snapshot, of the ingestion
    batches / of the query lane's (one engine per model serves both); ``precision``:
    model -> precision; ``int8_quality``: model -> the int8 gate's figures; ``stopped``: the
    final heartbeat of a worker that stopped cleanly (absent while it runs)."""

    wire_name = "heartbeat"

    worker_id: str
    # (None: not said; a worker always says, a minimal writer such as a test may not)
    pid: int | None = None
    host: str | None = None
    started_at: float | None = None
    seen_at: float | None = None
    jobs_done: int = 0
    jobs_failed: int = 0
    jobs_retried: int = 0
    points_written: int = 0
    write_calls: int = 0
    sink_retries: int = 0
    searches: int = 0
    engines: dict[str, dict[str, Any]] = field(default_factory=dict)
    query_engines: dict[str, dict[str, Any]] = field(default_factory=dict)
    limits: WorkerLimits = field(default_factory=WorkerLimits)
    precision: dict[str, str] = field(default_factory=dict)
    int8_quality: dict[str, Any] = field(default_factory=dict)
    stopped: bool | None = None
    # "all" (parse and encode), "encode" or "parse" (None: a worker from before roles: all)
    role: str | None = None
    files_parsed: int = 0
    # for the dashboard: documents and chunks finished (its time series), where the models run
    # ("cpu", "cuda:0"), what runs the forwards (torch, openvino), the largest batch in tokens
    # (batch fill: an engine's mean_batch_tokens over it) and the host's load (1-minute load
    # average over the CPU count; None where unknown)
    documents_done: int = 0
    chunks_done: int = 0
    device: str | None = None
    backend: str | None = None
    max_batch_tokens: int | None = None
    host_load: float | None = None
    schedules: list[ScheduledReindex] = field(default_factory=list)

    @property
    def alive(self) -> bool:
        return not self.stopped


def read_heartbeat(raw: bytes | None) -> Heartbeat | None:
    """The heartbeat stored in ``raw`` (None: none, or not one a worker wrote)."""
    if not raw:
        return None
    try:
        return Heartbeat.unpack(raw)
    except WireError:
        return None
