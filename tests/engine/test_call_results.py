"""``CallResults``: one future per encode call; each request's place in it."""

from __future__ import annotations

import asyncio

import pytest

from poolq.worker.engine.batching.requests import CallResults, EncodeResult


def _result(i: int) -> EncodeResult:
    return EncodeResult(f"r{i}", {}, i + 1, False)


async def test_the_call_is_done_once_every_request_is_in_order_of_the_call() -> None:
    call = CallResults(asyncio.get_running_loop().create_future(), 3)
    slots = [call.slot(i) for i in range(3)]
    for i in (2, 0):
        slots[i].set_result(_result(i))
    assert [s.done() for s in slots] == [True, False, True] and not call.future.done()
    slots[0].set_result(_result(9))  # a second result for a request is ignored
    slots[1].set_result(_result(1))
    assert [r.request_id for r in await call.future] == ["r0", "r1", "r2"]


async def test_one_failed_request_fails_the_call_and_marks_the_others_done() -> None:
    call = CallResults(asyncio.get_running_loop().create_future(), 2)
    a, b = call.slot(0), call.slot(1)
    a.set_exception(RuntimeError("boom"))
    assert b.done(), "the scheduler drops the rest of a failed call"
    b.set_result(_result(1))  # too late: ignored
    with pytest.raises(RuntimeError, match="boom"):
        await call.future


async def test_a_cancelled_call_marks_its_requests_done() -> None:
    call = CallResults(asyncio.get_running_loop().create_future(), 1)
    call.future.cancel()
    assert call.slot(0).done()
    call.slot(0).set_exception(RuntimeError("stopped"))  # no error on a cancelled call
