"""How a job ended, as workers record it under ``JOB_OUTCOME_KEY`` for ``poolq status`` and
:meth:`PoolqClient.wait` (``ingest/job_index.py``): ``done`` with the job's ``result``, or
``failed`` with its ``error`` text and ``code`` (no code: a record written before codes, or a
job arq failed without running it). Never the job's documents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from poolq.wire import constants
from poolq.wire.records.base import WireRecord
from poolq.wire.records.codes import ErrorCode


@dataclass(frozen=True)
class JobOutcomeRecord(WireRecord):
    wire_name = "job outcome"

    status: Literal["done", "failed"]
    finished_at: float
    result: Any = None
    error: str | None = None
    code: ErrorCode | None = None


def outcome_key(job_id: str) -> str:
    """Where a job's :class:`JobOutcomeRecord` is kept."""
    return constants.JOB_OUTCOME_KEY.format(job_id=job_id)
