"""The msgpack wire format: round trips of what jobs carry, refusal of pickles, garbage and
oversize payloads (routed to the rejected-payload job, never executed), and the error text of
a failed job's stored result."""

from __future__ import annotations

import datetime
import pickle
from typing import Any

import msgpack
import pytest
from arq.jobs import deserialize_job_raw, deserialize_result, serialize_job, serialize_result
from hypothesis import given
from hypothesis import strategies as st

from poolq.wire.records.errors import ErrorRecord, failure_of
from poolq.wire.serialization import (
    REJECTED_JOB,
    PayloadRejectedError,
    deserialize,
    job_deserializer,
    rejected_payload,
    serialize,
)
from poolq.worker.reliability.job_guard import retry_delay

JOB_KEYS = {"f", "a", "k", "t", "et"}

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary()
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.text() | st.integers(-5, 5), inner, max_size=5)
    ),
    max_leaves=30,
)


def job(**over: Any) -> dict[str, Any]:
    return {"f": "ingest", "a": ["c", [{"id": "d", "text": "t"}]], "k": {}, "t": 1, "et": 0} | over


@given(values)
def test_msgpack_values_round_trip(value: Any) -> None:
    assert deserialize(serialize(value)) == value


@given(st.lists(st.integers(-(2**63), 2**64 - 1), max_size=5))
def test_tuples_and_sets_travel_as_lists(items: list[int]) -> None:
    assert deserialize(serialize(tuple(items))) == items
    assert sorted(deserialize(serialize(set(items)))) == sorted(set(items))
    assert sorted(deserialize(serialize(frozenset(items)))) == sorted(set(items))


def test_exceptions_travel_as_code_type_and_message() -> None:
    # an ErrorRecord, nothing else
    assert deserialize(serialize(KeyError("text"))) == {
        "code": "internal",
        "type": "KeyError",
        "message": "'text'",
    }
    bad = deserialize(serialize({"r": ValueError("bad")}))["r"]
    assert (bad["type"], bad["code"]) == ("ValueError", "bad_request")


@pytest.mark.parametrize(
    "value",
    [object(), datetime.datetime(2024, 1, 1), datetime.date(2024, 1, 1), complex(1, 2), 2**64],
)
def test_anything_else_is_refused_when_serializing(value: Any) -> None:
    with pytest.raises(TypeError):
        serialize(value)


def test_a_trailing_byte_is_an_error_not_ignored() -> None:
    with pytest.raises(msgpack.ExtraData):
        deserialize(serialize({"a": 1}) + b"\x00")


# ---------------------------------------------------------------- the worker's deserializer


def test_an_arq_job_round_trips_through_the_worker_deserializer() -> None:
    raw = serialize_job("ingest", ("c", [{"id": "d"}]), {"x": 1}, 2, 1234, serializer=serialize)
    assert deserialize_job_raw(raw, deserializer=job_deserializer()) == (
        "ingest",
        ["c", [{"id": "d"}]],
        {"x": 1},
        2,
        1234,
    )


EXECUTED: list[str] = []


def _side_effect(tag: str) -> str:
    EXECUTED.append(tag)
    return tag


class Exploit:
    def __reduce__(self) -> tuple[Any, ...]:
        return (_side_effect, ("pwned",))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_pickle_is_refused_without_being_executed(protocol: int) -> None:
    raw = pickle.dumps(job(a=[Exploit()]), protocol=protocol)
    assert pickle.loads(raw) and EXECUTED == ["pwned"]  # it is a live exploit
    EXECUTED.clear()
    out = job_deserializer()(raw)
    assert EXECUTED == []
    assert out["f"] == REJECTED_JOB
    assert "not msgpack" in out["a"][0] and "never accepts pickle" in out["a"][0]


@pytest.mark.parametrize(
    "raw, why",
    [
        (b"", "not msgpack"),
        (b"\xc1", "not msgpack"),  # a byte msgpack never uses
        (b"\x92\x01", "not msgpack"),  # truncated array
        (serialize([1, 2]), "not an arq job"),
        (serialize("ingest"), "not an arq job"),
        (serialize({"f": "ingest", "a": [], "k": {}}), "not an arq job"),  # keys missing
    ],
)
def test_garbage_is_refused_with_the_reason(raw: bytes, why: str) -> None:
    out = job_deserializer()(raw)
    assert out == {"f": REJECTED_JOB, "a": [out["a"][0]], "k": {}, "t": 1, "et": 0}
    assert why in out["a"][0]


@given(st.binary(max_size=200))
def test_any_bytes_give_a_job_or_a_rejection_never_an_error(raw: bytes) -> None:
    out = job_deserializer()(raw)
    assert isinstance(out, dict) and set(out) >= JOB_KEYS
    if out["f"] != REJECTED_JOB:
        assert deserialize(raw) == out  # accepted only as the msgpack map it is


def test_the_size_limit_is_inclusive_and_checked_before_decoding() -> None:
    raw = serialize(job())
    assert job_deserializer(max_bytes=len(raw))(raw) == job()
    out = job_deserializer(max_bytes=len(raw) - 1)(raw)
    assert out["f"] == REJECTED_JOB
    assert f"{len(raw)} bytes, over the limit of {len(raw) - 1} bytes" in out["a"][0]
    # an oversize pickle is refused for its size: it is not even looked at
    assert "over the limit" in job_deserializer(max_bytes=10)(pickle.dumps(job()))["a"][0]


async def test_the_rejected_job_fails_for_good_with_its_message() -> None:
    out = job_deserializer()(b"\xc1")
    with pytest.raises(PayloadRejectedError) as info:
        await rejected_payload({}, *out["a"], **out["k"])
    assert str(info.value) == out["a"][0]
    assert retry_delay(info.value, 1, max_tries=5) is None  # permanent: no retry


# ---------------------------------------------------------------- results


def test_a_failed_jobs_stored_result_reads_back_as_its_error() -> None:
    raw = serialize_result(
        "ingest", (), {}, 1, 0, False, ValueError("bad doc"), 0, 1, "r", "q", "j",
        serializer=serialize,
    )  # fmt: skip
    result = deserialize_result(raw, deserializer=deserialize)
    assert failure_of(result.result).text() == "ValueError: bad doc"
    # an empty message never reaches a user ("TimeoutError: " and nothing else)
    empty = {"code": "internal", "type": "KeyError", "message": ""}
    assert failure_of(empty).text() == "KeyError: raised without a message"
    stored = deserialize(serialize(TimeoutError()))
    assert failure_of(stored).text() == "TimeoutError: timed out (the exception carried no message)"


@pytest.mark.parametrize(
    "result",
    [
        None,
        "ValueError: bad",
        {"points": 3},
        {"error": "x"},
        {"type": "ValueError", "message": "x"},
    ],
)
def test_no_error_record_in_anything_but_a_serialized_exception(result: Any) -> None:
    assert ErrorRecord.from_result(result) is None
