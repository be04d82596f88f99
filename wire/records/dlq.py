"""What ``poolq dlq retry`` did to one dead-lettered job: enqueued it again under a new id
(:meth:`PoolqClient.dlq_retry <poolq.ingest.client.PoolqClient.dlq_retry>`). Its map is the
command's JSON line, ``{"job_id", "new_job_id"}``."""

from __future__ import annotations

from dataclasses import dataclass

from poolq.wire.records.record import WireRecord


@dataclass(frozen=True)
class DlqRetried(WireRecord):
    wire_name = "dlq retried"

    job_id: str  # the dead-lettered job (gone from the list)
    new_job_id: str  # the job enqueued again in its place
