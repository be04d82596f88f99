"""How a job ended, as workers record it under ``JOB_OUTCOME_KEY`` for ``poolq status`` and
:meth:`PoolqClient.wait` (``ingest/job_index.py``): ``done`` with the job's ``result``, or
``failed`` with its ``error`` text and ``code`` (required for a failure: a job arq failed
without running it has the code of the exception arq stored, ``internal`` for its own
``JobExecutionFailed``), or ``cancelled`` (``wire/cancel.py``: its ``error`` says when and how
far it got). Never the job's documents.

:func:`job_result` reads a job's stored result back as its record: an :class:`IngestResult`,
or a reindex's :class:`ReindexSummary` or :class:`ReindexSkipped`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from poolq.wire import constants
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.record import WireError, WireRecord
from poolq.wire.records.reindex import ReindexSkipped, ReindexSummary, reindex_result
from poolq.wire.records.results import IngestResult

# what a job of poolq returns: an ingest job, or a reindex (run or skipped)
JobResult: TypeAlias = IngestResult | ReindexSummary | ReindexSkipped


@dataclass(frozen=True)
class JobOutcomeRecord(WireRecord):
    wire_name = "job outcome"

    status: Literal["done", "failed", "cancelled"]
    finished_at: float
    result: Any = None
    error: str | None = None
    code: ErrorCode | None = None

    def __post_init__(self) -> None:
        if self.status == "failed" and self.code is None:
            raise WireError(f"{self.wire_name}: code: missing (required when status is failed)")


def outcome_key(job_id: str) -> str:
    """Where a job's :class:`JobOutcomeRecord` is kept."""
    return constants.JOB_OUTCOME_KEY.format(job_id=job_id)


def job_result(result: Any) -> JobResult | None:
    """A job's stored result as its record (None for None): a reindex's summary or skip (the
    maps with a ``target``, or a ``skipped`` reason), else an ingest result. :class:`WireError`
    naming the field when it is none of them."""
    if result is None:
        return None
    if isinstance(result, dict) and ("target" in result or isinstance(result.get("skipped"), str)):
        return reindex_result(result)
    return IngestResult.from_wire(result)
