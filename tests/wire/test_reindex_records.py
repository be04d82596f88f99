"""The reindex records (``wire/records/reindex.py``): its summary, its skipped result and
its progress round-trip with every field on the wire; ``switched_from`` stays on the wire as
``null`` (``always_on_wire``) while other unset optional fields stay off it; what the real job
writes decodes strictly (against a real ``redis-server``; no models: the paths that need none);
and ``poolq reindex --wait`` prints the summary line it always printed.

A full reindex through a real worker, decoded strictly: ``tests/integration/test_wire_records.py``.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest
from redis.asyncio import Redis

from poolq.ingest.cli.reindex import summary_line
from poolq.ingest.client import PoolqClient
from poolq.wire import constants
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.job_args import ReindexArgs
from poolq.wire.records.outcome import job_result
from poolq.wire.records.record import WireError, WireRecord, always_on_wire
from poolq.wire.records.reindex import (
    REINDEX_STATES,
    ReindexProgress,
    ReindexSkipped,
    ReindexSummary,
    reindex_result,
)
from poolq.wire.records.results import DocumentErrorRecord, IngestResult
from poolq.wire.serialization import deserialize
from poolq.worker.app.jobs.reindex import run_reindex
from poolq.worker.config.settings import Settings
from poolq.worker.dev.local_redis import LocalRedis


def summary(**changes: Any) -> ReindexSummary:
    fields: dict[str, Any] = dict(
        collection="kb", source="/data/kb.jsonl", full=True, documents=3, target="kb__2",
        new=3, changed=0, stale=0, metadata_only=0, unchanged=0, removed=1,
        switched_from="kb__1", dropped="kb__1", points=7,
        errors=[DocumentErrorRecord("b", "text", "text: empty", ErrorCode.BAD_REQUEST)],
        encoded_chunks=7, engine_requests=14, write_calls=2, points_written=7, seconds=1.25,
        listed=4, fetched=3,
    )  # fmt: skip
    return ReindexSummary(**(fields | changes))


def progress(**changes: Any) -> ReindexProgress:
    fields: dict[str, Any] = dict(
        collection="kb", source="/data/kb.jsonl", full=True, job_id="reindex-1", state="failed",
        started_at=10.0, done=2, to_encode=3, new=3, changed=0, stale=0, metadata_only=0,
        unchanged=0, removed=1, updated_at=11.5, result=summary(), error="OSError: gone",
        code=ErrorCode.INTERNAL,
    )  # fmt: skip
    return ReindexProgress(**(fields | changes))


FULL: list[WireRecord] = [summary(), ReindexSkipped(collection="kb", skipped="busy"), progress()]


@pytest.mark.parametrize("record", FULL, ids=lambda r: type(r).__name__)
def test_every_reindex_record_round_trips_strictly_with_every_field(record: Any) -> None:
    wire = deserialize(record.pack())
    assert set(wire) == type(record).field_names()
    assert type(record).unpack(record.pack(), strict=True) == record


def test_the_wire_keeps_the_keys_and_their_order_clients_always_saw() -> None:
    assert list(summary().to_wire()) == [
        "collection", "source", "full", "documents", "target", "new", "changed", "stale",
        "metadata_only", "unchanged", "removed", "switched_from", "dropped", "points", "errors",
        "encoded_chunks", "engine_requests", "write_calls", "points_written", "seconds",
        "listed", "fetched",
    ]  # fmt: skip
    assert summary().to_wire()["errors"] == [
        {"id": "b", "field": "text", "error": "text: empty", "code": "bad_request"}
    ]


def test_switched_from_stays_on_the_wire_as_null_and_dropped_does_not() -> None:
    first = summary(switched_from=None, dropped=None)
    wire = first.to_wire()
    assert "switched_from" in wire and wire["switched_from"] is None
    assert "dropped" not in wire
    assert ReindexSummary.from_wire(wire, strict=True) == first


def test_always_on_wire_is_per_field() -> None:
    @dataclasses.dataclass(frozen=True)
    class Pair(WireRecord):
        shown: str | None = always_on_wire()
        hidden: str | None = None

    assert Pair().to_wire() == {"shown": None}
    assert Pair("a", "b").to_wire() == {"shown": "a", "hidden": "b"}


def test_progress_before_planning_has_no_counts_on_the_wire() -> None:
    start = ReindexProgress(
        collection="kb", source="/s", full=False, job_id="j", state="reading source", started_at=1.0
    )
    assert set(start.to_wire()) == {
        "collection", "source", "full", "job_id", "state", "started_at", "done", "to_encode",
        "parsed", "pages", "listed", "fetched",
    }  # fmt: skip


def test_reindex_result_tells_a_summary_from_a_skipped_run() -> None:
    assert reindex_result(summary().to_wire()) == summary()
    skipped = {"collection": "kb", "skipped": "another reindex of 'kb' is running"}
    assert reindex_result(skipped) == ReindexSkipped(**skipped)
    with pytest.raises(WireError, match=r"^reindex summary: target: missing"):
        reindex_result(_without("target"))


def test_a_job_result_reads_back_as_its_record() -> None:
    assert job_result(summary().to_wire()) == summary()
    skipped = ReindexSkipped(collection="kb", skipped="busy")
    assert job_result(skipped.to_wire()) == skipped
    ingest = IngestResult(2, 1, [DocumentErrorRecord("b", "text", "x", ErrorCode.BAD_REQUEST)])
    assert job_result(ingest.to_wire()) == ingest
    assert job_result(None) is None
    with pytest.raises(WireError, match=r"^ingest result: expected a map, got 5"):
        job_result(5)


def test_a_failed_progress_without_its_code_does_not_decode() -> None:
    wire = progress().to_wire()
    del wire["code"]
    with pytest.raises(WireError, match=r"^reindex progress: code: missing \(required when"):
        ReindexProgress.from_wire(wire)


def _without(key: str) -> dict[str, Any]:
    wire = summary().to_wire()
    del wire[key]
    return wire


def test_the_cli_summary_line_is_unchanged() -> None:
    assert summary_line(summary(listed=None, fetched=None)) == (
        "full rebuild of 'kb': 3 documents (3 new, 0 changed, 0 stale, 0 metadata only, "
        "0 unchanged, 1 removed); 7 chunks encoded, 7 points written, 1 errors in 1.25s; "
        "alias 'kb' -> 'kb__2', dropped 'kb__1'"
    )
    incremental = summary(
        full=False, target="kb", switched_from=None, dropped=None, errors=[], listed=None,
        fetched=None,
    )  # fmt: skip
    assert summary_line(incremental) == (
        "incremental of 'kb': 3 documents (3 new, 0 changed, 0 stale, 0 metadata only, "
        "0 unchanged, 1 removed); 7 chunks encoded, 7 points written, 0 errors in 1.25s"
    )
    assert summary_line(summary()).endswith("; 4 objects listed, 3 fetched")


# ---------------------------------------------------------------- the real job, strictly


@pytest.fixture
async def redis(redis_server: LocalRedis):
    r = Redis.from_url(redis_server.url)
    yield r
    await r.aclose()


def runtime(root: str) -> Any:
    """What ``run_reindex`` touches before it needs a model or a store."""
    engines = {"dense": SimpleNamespace(stats=SimpleNamespace(texts=0))}
    return SimpleNamespace(
        settings=Settings(source_roots=root),
        vectorizer=SimpleNamespace(engines=engines),
        writer=SimpleNamespace(write_calls=0, points_written=0),
    )


async def test_a_skipped_reindex_returns_a_strict_skipped_record(redis: Redis, tmp_path) -> None:
    await redis.set(constants.REINDEX_LOCK_KEY.format(collection="kb"), "other-job")
    options = ReindexArgs(str(tmp_path / "kb.jsonl"), "kb")
    result = await run_reindex(runtime(str(tmp_path)), options, job_id="j-2", redis=redis)
    skipped = ReindexSkipped.from_wire(deserialize(result.pack()), strict=True)
    assert skipped.skipped == "another reindex of 'kb' is running (job b'other-job')"


async def test_a_failed_reindex_publishes_strict_progress_the_client_reads(
    redis: Redis, redis_server: LocalRedis, tmp_path
) -> None:
    missing = str(tmp_path / "gone.jsonl")  # inside the roots, but not there
    with pytest.raises(OSError):
        await run_reindex(
            runtime(str(tmp_path)), ReindexArgs(missing, "kb"), job_id="j-1", redis=redis
        )
    raw = await redis.get(constants.REINDEX_PROGRESS_KEY.format(collection="kb"))
    record = ReindexProgress.unpack(raw, strict=True)
    assert (record.state, record.job_id, record.source) == ("failed", "j-1", missing)
    assert record.state in REINDEX_STATES and record.code == ErrorCode.INTERNAL
    assert record.error is not None and "gone.jsonl" in record.error
    async with PoolqClient(redis_server.url) as client:
        assert await client.reindex_progress("kb") == [record]
