"""A parse job and the ingest jobs it handed on to are one job to a waiting client."""

from __future__ import annotations

from poolq.ingest.job_chain import Chains, merged
from poolq.ingest.job_index import JobOutcome
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.progress import JobProgressRecord
from poolq.wire.records.results import DocumentErrorRecord, IngestResult

BAD = DocumentErrorRecord("bad.pdf", "file", "bad.pdf: password-protected", ErrorCode.ENCRYPTED)
PARSED = IngestResult(0, 0, [BAD], 0, 1.0, parsed=2, pages=30, next_jobs=["p.encode0"])


def test_a_chain_ends_when_its_ingest_jobs_have():
    chains = Chains()
    parse = JobOutcome("p", "done", PARSED)
    assert chains.follow(parse) == ["p.encode0"]
    assert chains.ended({}) == []
    ingest = JobOutcome("p.encode0", "done", IngestResult(7, 2, [], 0, 2.5))
    (one,) = chains.ended({"p.encode0": ingest})
    assert one.job_id == "p" and one.status == "done"
    assert one.result == IngestResult(7, 2, [BAD], 0, 3.5, 2, 30, ["p.encode0"])
    assert chains.ended({"p.encode0": ingest}) == []  # reported once


def test_running_chains_show_both_stages():
    chains = Chains()
    chains.follow(JobOutcome("p", "done", PARSED))
    rec = chains.records({"p.encode0": JobProgressRecord(2, 1, 5, 4, 0, 0)})["p"]
    assert (rec.documents, rec.done, rec.points, rec.errors) == (3, 2, 4, 1)
    assert (rec.parsed, rec.pages) == (2, 30)


def test_a_failed_ingest_job_fails_the_chain_and_every_file_refused_is_refused():
    failed = JobOutcome("p.encode0", "failed", None, "SinkError: down", ErrorCode.SINK)
    out = merged(JobOutcome("p", "done", PARSED), [failed])
    assert out.status == "failed" and out.code == ErrorCode.SINK and "p.encode0" in out.error
    chains = Chains()
    refused = JobOutcome("q", "refused", IngestResult(0, 0, [BAD]))
    assert chains.follow(refused) == []
    assert refused.result.all_refused
