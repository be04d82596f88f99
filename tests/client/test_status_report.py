"""The client's typed results: ``status()``'s :class:`StatusReport` and ``dlq_retry()``'s
:class:`DlqRetried`, and the JSON ``poolq status --json`` / ``poolq dlq retry --json`` print
from them (a contract: keys, order and values as before the records)."""

from __future__ import annotations

import json

import pytest

from poolq.ingest.client_reads import StatusReport
from poolq.ingest.job_index import JobOutcome
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.dlq import DlqRetried
from poolq.wire.records.heartbeat import Heartbeat
from poolq.wire.records.record import WireError
from poolq.wire.records.reindex import ReindexProgress
from poolq.wire.records.results import IngestResult

REPORT = StatusReport(
    counts={"queued": 1, "running": 0, "done": 1, "failed": 1},
    jobs=[
        JobOutcome("a", "done", IngestResult(points=3, documents=1)),
        JobOutcome("b", "failed", None, "ValueError: bad", ErrorCode.INTERNAL),
        JobOutcome("c", "queued"),
    ],
    workers=[Heartbeat(worker_id="w1", pid=7)],
    reindex=[
        ReindexProgress(
            collection="docs",
            source="/data",
            full=False,
            job_id="reindex-1",
            state="done",
            started_at=1.0,
        )
    ],
    workers_alive=1,
    last_heartbeat_age_s=0.5,
)


def test_the_json_is_the_commands_contract():
    out = REPORT.to_json()
    assert list(out) == [
        "jobs", "counts", "workers", "reindex", "workers_alive", "last_heartbeat_age_s",
    ]  # fmt: skip
    assert out["jobs"] == [
        {"job_id": "a", "status": "done", "result": REPORT.jobs[0].result.to_wire(),
         "error": None},
        {"job_id": "b", "status": "failed", "result": None, "error": "ValueError: bad"},
        {"job_id": "c", "status": "queued", "result": None, "error": None},
    ]  # fmt: skip
    assert out["workers"] == [REPORT.workers[0].to_wire()]
    assert out["reindex"] == [REPORT.reindex[0].to_wire()]
    assert (out["counts"], out["workers_alive"], out["last_heartbeat_age_s"]) == (
        REPORT.counts, 1, 0.5,
    )  # fmt: skip
    assert REPORT.to_json(with_jobs=False)["jobs"] == []


def test_the_json_reads_back_as_the_report_but_the_codes():
    back = StatusReport.from_json(json.loads(json.dumps(REPORT.to_json())))
    assert back.jobs[1].code is None  # not in the JSON
    assert back.jobs[1].error == "ValueError: bad"
    assert back == StatusReport(
        REPORT.counts,
        [REPORT.jobs[0], JobOutcome("b", "failed", None, "ValueError: bad"), REPORT.jobs[2]],
        REPORT.workers,
        REPORT.reindex,
        1,
        0.5,
    )


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"workers_alive": "1"}, "workers_alive: expected an integer"),
        ({"counts": {"done": "1"}}, "counts: expected a map of integers"),
        ({"jobs": [{"status": "done"}]}, "expected maps with a job_id"),
        ({"jobs": [{"job_id": "a", "status": "done", "result": {"points": "x"}}]}, "points"),
        ({"workers": [{"pid": 1}]}, "worker_id: missing"),
    ],
)
def test_a_report_that_does_not_match_is_refused(change, match):
    with pytest.raises(WireError, match=match):
        StatusReport.from_json(REPORT.to_json() | change)
    data = REPORT.to_json()
    del data["counts"]
    with pytest.raises(WireError, match="counts: missing"):
        StatusReport.from_json(data)


def test_a_retried_dead_letter_is_the_commands_json_line():
    retried = DlqRetried("bad-1", "bad-1~retry-0a1b2c3d")
    assert retried.to_wire() == {"job_id": "bad-1", "new_job_id": "bad-1~retry-0a1b2c3d"}
    assert DlqRetried.from_wire(retried.to_wire(), strict=True) == retried
