"""What a client enqueued, kept beside the job under ``JOB_INFO_KEY`` so the dashboard can list
and filter jobs by collection and lane without reading their documents (written at enqueue by
``ingest/client.py``, read by ``ingest/dashboard/``). A job enqueued by another writer (a dead
letter retried, a parse job's hand-on) may have none: readers show what they know."""

from __future__ import annotations

from dataclasses import dataclass

from poolq.wire import constants
from poolq.wire.records.record import WireRecord


@dataclass(frozen=True)
class JobInfo(WireRecord):
    """``function``: ingest, parse or reindex; ``priority``: the lane (interactive or bulk);
    ``documents``: in the job (files for a parse job); ``enqueued_at``: unix seconds."""

    wire_name = "job info"

    function: str
    collection: str
    priority: str = "bulk"
    documents: int = 0
    enqueued_at: float = 0.0


def job_info_key(job_id: str) -> str:
    return constants.JOB_INFO_KEY.format(job_id=job_id)
