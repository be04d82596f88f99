"""``sinks/proto/request_buffer.py``: a request written in place into a new ``bytes`` (CPython's
``PyBytes_FromStringAndSize(NULL, n)``) is byte for byte what the portable path (a
``bytearray``, then one copy) and a plain join of the same parts give; each call returns a new
object, and a plan that does not add up to its size is refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from poolq.sinks.points import PointRecord, point_id
from poolq.sinks.proto import request_buffer
from poolq.sinks.proto import upsert as enc
from poolq.sinks.proto.request_buffer import Rows, write_plan


def joined(plan: list) -> bytes:
    out = []
    for part in plan:
        if isinstance(part, Rows):
            out += [part.header + row.tobytes() for row in part.data]
        else:
            out.append(bytes(part) if isinstance(part, bytes) else part.tobytes())
    return b"".join(out)


parts = st.one_of(
    st.binary(min_size=0, max_size=40),
    st.integers(0, 64).map(lambda n: np.arange(n, dtype=np.uint8)),
    st.tuples(st.binary(min_size=1, max_size=6), st.integers(1, 9), st.integers(1, 24)).map(
        lambda t: Rows(t[0], (np.arange(t[1] * t[2]) % 251).astype(np.uint8).reshape(t[1], t[2]))
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(parts, max_size=12))
def test_in_place_equals_the_portable_path_and_a_join(plan):
    expected = joined(plan)
    size = len(expected)
    got = write_plan(plan, size)
    assert type(got) is bytes and got == expected
    saved = request_buffer._NEW_BYTES
    request_buffer._NEW_BYTES = None  # another interpreter than CPython
    try:
        assert write_plan(plan, size) == expected
    finally:
        request_buffer._NEW_BYTES = saved


def test_each_request_is_a_new_object_of_its_own():
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((92, 128)).astype(np.float32)
    points = [
        PointRecord(point_id("d", i), {"colbert": rows, "dense": rows[0]}, {}) for i in (0, 1)
    ]
    a = enc.upsert_request("c", points)
    b = enc.upsert_request("c", points)
    assert a == b and a is not b
    before = bytes(a)
    enc.upsert_request("c", points[:1])  # a later request leaves an earlier one as it was
    assert a == before
    # a strided view (every other row) is written as its own rows, not the base array's
    assert enc.upsert_request("c", [PointRecord(points[0].id, {"colbert": rows[::2]}, {})]) == (
        enc.upsert_request("c", [PointRecord(points[0].id, {"colbert": rows[::2].copy()}, {})])
    )


def test_a_plan_that_does_not_add_up_is_refused():
    with pytest.raises(AssertionError, match="planned 5 bytes, wrote 3"):
        write_plan([b"abc"], 5)
