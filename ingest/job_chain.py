"""Parse jobs and the ingest jobs they hand their documents to, seen as one job by
:meth:`PoolqClient.wait` (part of :mod:`poolq.ingest.client`).

A parse job ends with an :class:`IngestResult` naming ``next_jobs``; the wait then follows
those, and reports the parse job once they have all ended: as one outcome whose result adds the
ingest jobs' points, documents and errors to the files the parse job could not read. While the
chain runs, its progress is the parse job's (files parsed, pages) plus its ingest jobs'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from poolq.ingest.job_index import JobOutcome
from poolq.wire.records.progress import JobProgressRecord
from poolq.wire.records.results import IngestResult

_COUNTS = ("done", "chunks", "points", "errors", "skipped")


@dataclass
class Chains:
    """What a wait knows of the parse jobs among its jobs."""

    parsed: dict[str, JobOutcome] = field(default_factory=dict)  # parse job -> its own outcome
    next_jobs: dict[str, list[str]] = field(default_factory=dict)  # parse job -> ingest jobs

    def follow(self, outcome: JobOutcome) -> list[str]:
        """The ingest jobs to wait for before ``outcome``'s job counts as finished (none: it
        is finished now)."""
        result = outcome.result
        if not isinstance(result, IngestResult) or not result.next_jobs:
            return []
        self.parsed[outcome.job_id] = outcome
        self.next_jobs[outcome.job_id] = list(result.next_jobs)
        return list(result.next_jobs)

    def ended(self, finished: Mapping[str, JobOutcome]) -> list[JobOutcome]:
        """The chains whose every ingest job is in ``finished``, as one outcome each (once)."""
        out = []
        for job_id, nexts in list(self.next_jobs.items()):
            if all(n in finished for n in nexts):
                out.append(merged(self.parsed[job_id], [finished[n] for n in nexts]))
                del self.next_jobs[job_id]
        return out

    def records(self, records: Mapping[str, JobProgressRecord]) -> dict[str, JobProgressRecord]:
        """``records`` with each running chain's parse job standing for the whole chain."""
        out = dict(records)
        for job_id, nexts in self.next_jobs.items():
            result = self.parsed[job_id].result
            assert isinstance(result, IngestResult)
            parts = [records.get(n) or JobProgressRecord() for n in nexts]
            sums = {k: sum(getattr(p, k) for p in parts) for k in _COUNTS}
            sums["done"] += len(result.errors)
            sums["errors"] += len(result.errors)
            out[job_id] = JobProgressRecord(
                documents=result.size, parsed=result.parsed, pages=result.pages,
                ocr_pages=result.ocr_pages, **sums,
            )  # fmt: skip
        return out


def merged(parse: JobOutcome, ingest: Sequence[JobOutcome]) -> JobOutcome:
    """One outcome for a parse job and the ingest jobs it handed on to."""
    first = parse.result
    assert isinstance(first, IngestResult)
    failed = next((o for o in ingest if o.status == "failed"), None)
    if failed is not None:
        error = f"its documents' ingest job {failed.job_id} failed: {failed.error}"
        return JobOutcome(parse.job_id, "failed", None, error, failed.code)
    results = [o.result for o in ingest if isinstance(o.result, IngestResult)]
    result = IngestResult(
        points=sum(r.points for r in results),
        documents=sum(r.documents for r in results),
        errors=first.errors + [e for r in results for e in r.errors],
        skipped=sum(r.skipped for r in results),
        seconds=round(first.seconds + max((r.seconds for r in results), default=0.0), 3),
        parsed=first.parsed,
        pages=first.pages,
        next_jobs=first.next_jobs,
        ocr_pages=first.ocr_pages,
    )
    return JobOutcome(parse.job_id, "refused" if result.all_refused else "done", result)
