"""The records that cross Redis (``wire/records``): every record round-trips, a strict
decode refuses a field one side does not declare and names it, a missing or mistyped field is
named, and what the real producers write decodes strictly (a field written on one side only
fails here). No models: the producers are the real functions, against a real ``redis-server``
where they write to Redis."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio import Redis

from poolq.ingest.search_call import read_reply, search_call
from poolq.wire import constants
from poolq.wire.documents import validate_documents
from poolq.wire.records.cancel import CancelRequest
from poolq.wire.records.codes import ErrorCode, error_code
from poolq.wire.records.dead_letter import DeadLetter
from poolq.wire.records.errors import ErrorRecord
from poolq.wire.records.heartbeat import Heartbeat, ScheduledReindex, WorkerLimits
from poolq.wire.records.job_args import IngestArgs, ReindexArgs
from poolq.wire.records.job_info import JobInfo
from poolq.wire.records.outcome import JobOutcomeRecord, outcome_key
from poolq.wire.records.progress import JobProgressRecord
from poolq.wire.records.record import WireError, WireRecord
from poolq.wire.records.results import DocumentErrorRecord, IngestResult
from poolq.wire.records.search import SearchCall, SearchReply
from poolq.wire.search_results import SearchError, SearchRequest
from poolq.wire.serialization import PayloadRejectedError, deserialize, serialize
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.pooling.params import PoolingParamsError
from poolq.worker.reliability import dead_letter
from poolq.worker.reliability.deadlines import JobStalledError
from poolq.worker.runtime.job_progress import JobProgress
from poolq.worker.runtime.search_service import Envelope, error_reply, parse_search

# one of each record with every field set (none left at a default that to_wire leaves out)
FULL: list[WireRecord] = [
    IngestArgs("docs", [{"id": "a", "text": "x"}], True, "interactive"),
    ReindexArgs("/data/src.jsonl", "docs", True, True),
    IngestResult(
        3, 2, [DocumentErrorRecord("b", "text", "text: empty", ErrorCode.BAD_REQUEST)], 1, 0.25
    ),
    DocumentErrorRecord(None, "source", "line 3: not JSON", ErrorCode.BAD_REQUEST),
    JobProgressRecord(8, 5, 12, 11, 1, 2, 3, 40),
    Heartbeat(
        "w-1",
        42,
        "host",
        1.5,
        2.5,
        3,
        1,
        2,
        40,
        4,
        1,
        7,
        {"dense": {"batches": 3}},
        {"dense": {"batches": 1}},
        WorkerLimits(10, 100, 1000, 500),
        {"dense": "int8"},
        {"dense": {"passed": True}},
        True,
        "all",
        6,
        12,
        30,
        "cpu",
        "torch",
        2048,
        0.5,
        [ScheduledReindex("docs", "/data/src", "0 3 * * *", True, 1.0e9)],
    ),
    ScheduledReindex("docs", "/data/src", "0 3 * * *", False, 1.0e9),
    JobInfo("ingest", "docs", "interactive", 3, 7.0),
    CancelRequest("j-1", "cancelling"),
    WorkerLimits(1, 2, 3),
    SearchCall("r-1", "q", {"collection": "docs"}, constants.SEARCH_REPLY_PREFIX + "r-1", 9.5),
    SearchReply("r-1", {"query": "q"}, None),
    SearchReply("r-1", None, ErrorRecord(ErrorCode.TIMEOUT, "TimeoutError", "late")),
    ErrorRecord(ErrorCode.SINK, "SinkUnavailableError", "Qdrant unavailable"),
    DeadLetter(
        "j-1", "ingest", ["docs", []], {"force": True}, "ValueError: x", 3, 7.0, code="bad_request"
    ),
    JobOutcomeRecord("failed", 7.0, {"points": 1}, "ValueError: x", ErrorCode.BAD_REQUEST),
]


@pytest.mark.parametrize("record", FULL, ids=lambda r: type(r).__name__)
def test_every_record_round_trips_strictly_with_every_field_on_the_wire(record: Any) -> None:
    wire = deserialize(record.pack())
    expected = type(record).field_names()
    if isinstance(record, SearchReply):  # exactly one of result and error
        expected -= {"error" if record.error is None else "result"}
    assert set(wire) == expected
    assert type(record).unpack(record.pack(), strict=True) == record


@given(st.lists(st.integers(0, 2**40), min_size=6, max_size=6))
def test_progress_round_trips_through_a_hash(values: list[int]) -> None:
    record = JobProgressRecord(*values)
    as_redis = {k.encode(): str(v).encode() for k, v in record.to_hash().items()}
    assert JobProgressRecord.from_hash(as_redis, strict=True) == record


@given(
    points=st.integers(0, 10**9),
    documents=st.integers(0, 10**6),
    errors=st.lists(
        st.tuples(st.none() | st.text(), st.text(), st.text(), st.sampled_from(ErrorCode)),
        max_size=4,
    ),
    skipped=st.integers(0, 10**6),
    seconds=st.floats(0, 1e6),
)
def test_ingest_results_round_trip(
    points: int, documents: int, errors: list[Any], skipped: int, seconds: float
) -> None:
    record = IngestResult(
        points, documents, [DocumentErrorRecord(*e) for e in errors], skipped, seconds
    )
    assert IngestResult.unpack(record.pack(), strict=True) == record


def test_strict_decoding_refuses_an_unknown_field_and_names_it() -> None:
    wire = Heartbeat("w-1", seen_at=1.0).to_wire() | {"gpu_memory": 3}
    assert Heartbeat.from_wire(wire) == Heartbeat("w-1", seen_at=1.0)  # lenient: ignored
    with pytest.raises(WireError, match=r"^heartbeat: unknown field\(s\) gpu_memory \(expected"):
        Heartbeat.from_wire(wire, strict=True)
    nested = {"worker_id": "w", "limits": {"max_job_bytes": 1, "max_tokens": 2}}
    with pytest.raises(WireError, match=r"^heartbeat: limits: unknown field\(s\) max_tokens"):
        Heartbeat.from_wire(nested, strict=True)


@pytest.mark.parametrize(
    "cls, data, message",
    [
        (IngestResult, {"documents": 1}, "ingest result: points: missing (a required field)"),
        (Heartbeat, {"worker_id": "w", "pid": "12"}, "heartbeat: pid: expected an integer, got '12'"),
        (Heartbeat, {"worker_id": "w", "pid": True}, "heartbeat: pid: expected an integer, got True"),
        (
            IngestResult,
            {"points": 1, "documents": 1, "errors": [{"id": "a", "field": "text"}]},
            "ingest result: errors[0]: error: missing (a required field)",
        ),
        (
            DeadLetter,
            {"job_id": "j", "function": "ingest", "code": "oops"},
            "dead letter: code: expected one of 'bad_request', 'timeout', 'stalled', ",
        ),
        (JobOutcomeRecord, {"status": "lost", "finished_at": 1}, "job outcome: status: expected one of 'done', 'failed', 'cancelled', got 'lost'"),
        # every error carries its code: a record without one does not decode
        (DeadLetter, {"job_id": "j", "function": "ingest"}, "dead letter: code: missing (a required field)"),
        (JobOutcomeRecord, {"status": "failed", "finished_at": 1, "error": "E: x"}, "job outcome: code: missing (required when status is failed)"),
        (IngestResult, {"points": 0, "documents": 0, "errors": [{"id": "a", "field": "text", "error": "x"}]}, "ingest result: errors[0]: code: missing (a required field)"),
        (SearchReply, {"id": "r-1", "error": {"type": "ValueError", "message": "m"}}, "search reply: error: code: missing (a required field)"),
        (ErrorRecord, {"type": "ValueError", "message": "m"}, "error: code: missing (a required field)"),
        (SearchCall, [1], "search call: expected a map, got list"),
    ],
)  # fmt: skip
def test_a_missing_or_mistyped_field_is_named(cls: Any, data: Any, message: str) -> None:
    with pytest.raises(WireError) as e:
        cls.from_wire(data)
    assert str(e.value).startswith(message)


def test_unpack_refuses_what_is_not_msgpack() -> None:
    with pytest.raises(WireError, match=r"^heartbeat: not msgpack"):
        Heartbeat.unpack(b"\x80\x04junk")


# ---------------------------------------------------------------- errors and their codes


@pytest.mark.parametrize(
    "error, code",
    [
        (ValueError("x"), ErrorCode.BAD_REQUEST),
        (SearchError("x"), ErrorCode.BAD_REQUEST),
        (PoolingParamsError("x"), ErrorCode.BAD_REQUEST),
        (PayloadRejectedError("x"), ErrorCode.PAYLOAD_REJECTED),
        (JobStalledError("x"), ErrorCode.STALLED),
        (TimeoutError(), ErrorCode.TIMEOUT),
        (RuntimeError("x"), ErrorCode.INTERNAL),
    ],
)
def test_the_worker_maps_each_exception_to_its_code(error: BaseException, code: ErrorCode) -> None:
    assert error_code(error) == code
    record = ErrorRecord.of(error)
    assert record.message  # never empty
    assert ErrorRecord.from_result(deserialize(serialize(error))) == record  # as arq stores it


def test_a_stored_result_is_an_error_only_with_a_code() -> None:
    assert ErrorRecord.from_result({"type": "ValueError", "message": "bad"}) is None
    assert ErrorRecord.from_result({"points": 1, "documents": 1, "errors": []}) is None
    with pytest.raises(WireError, match=r"^error: code: expected one of"):
        ErrorRecord.from_result({"code": "oops", "type": "ValueError", "message": "bad"})
    stored = deserialize(serialize(ValueError("bad")))
    assert stored == {"code": "bad_request", "type": "ValueError", "message": "bad"}


@pytest.mark.parametrize(
    "error, raised",
    [
        (PoolingParamsError("pooling: top_k must be >= 1"), SearchError),
        (SearchError("no collection 'docs'"), SearchError),
        (RuntimeError("qdrant exploded"), RuntimeError),
        (JobStalledError("stalled"), RuntimeError),
    ],
)
def test_a_search_error_reaches_the_client_classified_by_its_code(
    error: BaseException, raised: type[BaseException]
) -> None:
    raw = error_reply("r-1", error).pack()  # as the worker pushes it
    with pytest.raises(raised, match=str(error)) as e:
        read_reply(raw)  # as the client reads it
    assert type(e.value) is raised


def test_the_client_decides_by_code_not_by_class_name() -> None:
    renamed = SearchReply("r-1", error=ErrorRecord(ErrorCode.BAD_REQUEST, "RenamedError", "bad"))
    with pytest.raises(SearchError, match=r"^bad$"):
        read_reply(renamed.pack())
    internal = SearchReply("r-1", error=ErrorRecord(ErrorCode.INTERNAL, "ValueError", "boom"))
    with pytest.raises(RuntimeError, match=r"\(internal\): ValueError: boom"):
        read_reply(internal.pack())
    codeless = serialize({"id": "r-1", "error": {"type": "SchemaMismatchError", "message": "m"}})
    with pytest.raises(WireError, match=r"^search reply: error: code: missing"):
        read_reply(codeless)  # no code: no reply, whatever the class name


# ---------------------------------------------------------------- the real producers, strictly


def test_the_clients_search_call_decodes_strictly_in_the_worker() -> None:
    request = SearchRequest("docs", "hybrid", 5, ("lang=en",), group_by="doc_id")
    raw = search_call("r-1", "parse json", request, 30.0).pack()
    call = SearchCall.unpack(raw, strict=True)
    assert parse_search(Envelope(call.id, call.reply_to, deserialize(raw))) == (
        "parse json",
        request,
    )


def test_refused_documents_decode_strictly_as_ingest_result_errors() -> None:
    docs = [{"id": "a", "text": ""}, {"text": "no id"}, {"id": "c", "text": "ok", "extra": 1}]
    _, errors = validate_documents(docs, max_bytes=1000)
    assert errors
    result = IngestResult(0, 0, [e.as_record() for e in errors]).to_wire()
    wire = deserialize(serialize({**result, "errors": [e.as_dict() for e in errors]}))
    decoded = IngestResult.from_wire(wire, strict=True).errors
    assert decoded == [e.as_record() for e in errors]
    assert [e.code for e in decoded] == [ErrorCode.BAD_REQUEST] * 3  # refused: bad requests
    assert {e["code"] for e in wire["errors"]} == {"bad_request"}


@pytest.fixture
async def redis(redis_server: LocalRedis):
    r = Redis.from_url(redis_server.url)
    yield r
    await r.aclose()


async def test_the_progress_publisher_writes_exactly_the_record(redis: Redis) -> None:
    progress = JobProgress(redis, "j-1", documents=8)
    async with progress:
        progress.add(done=3, chunks=5, points=4, errors=1, skipped=2)
    raw = await redis.hgetall(constants.JOB_PROGRESS_KEY.format(job_id="j-1"))
    stored = JobProgressRecord.from_hash(raw, strict=True)
    assert stored.updated_at > 0  # stamped by every write (the dashboard's stall timer)
    assert dataclasses.replace(stored, updated_at=0) == JobProgressRecord(8, 3, 5, 4, 1, 2)


async def test_a_dead_letter_and_its_outcome_decode_strictly(redis: Redis) -> None:
    error = ValueError("documents: expected a list, got str")
    await dead_letter.record(redis, "j-1", "ingest", ["docs", "oops"], {"force": True}, error, 1)
    raw = await redis.hget(constants.DEAD_LETTER_KEY, "j-1")
    letter = DeadLetter.unpack(raw, strict=True)
    assert (letter.error, letter.code) == (f"ValueError: {error}", ErrorCode.BAD_REQUEST)
    assert letter.args == ["docs", "oops"] and letter.kwargs == {"force": True}
    outcome = JobOutcomeRecord.unpack(await redis.get(outcome_key("j-1")), strict=True)
    assert (outcome.status, outcome.error, outcome.code) == ("failed", letter.error, "bad_request")


async def test_the_heartbeat_thread_writes_a_strict_heartbeat(redis_server: LocalRedis) -> None:
    from types import SimpleNamespace

    from poolq.worker.config.settings import Settings
    from poolq.worker.reliability.heartbeat import HeartbeatThread
    from poolq.worker.runtime.worker_runtime import Runtime

    model = SimpleNamespace(precision="float32", int8_report=None)
    engine = SimpleNamespace(
        model=model, stats_snapshot=lambda queries=False: {"batches": 1 if queries else 2}
    )
    vectorizer = SimpleNamespace(engines={"dense": engine})
    writer = SimpleNamespace(points_written=5, write_calls=1, retries=0)
    rt = Runtime(Settings(), vectorizer, writer)  # type: ignore[arg-type]
    beat = HeartbeatThread(redis_server.url, rt.worker_id, rt.heartbeat)
    assert beat.beat()
    beat.stop()
    r = Redis.from_url(redis_server.url)
    try:
        raw = await r.get(constants.HEARTBEAT_KEY.format(worker_id=rt.worker_id))
    finally:
        await r.aclose()
    heartbeat = Heartbeat.unpack(raw, strict=True)
    assert heartbeat.limits == WorkerLimits()  # the settings' defaults
    assert (heartbeat.points_written, heartbeat.precision) == (5, {"dense": "float32"})
    assert heartbeat.engines == {"dense": {"batches": 2}} and heartbeat.alive
    assert heartbeat.query_engines == {"dense": {"batches": 1}}  # the same engine's query lane
