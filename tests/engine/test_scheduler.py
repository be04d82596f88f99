"""Scheduler unit tests: token budget, request cap, priority, turns, cancellation, task order."""

import asyncio

import pytest

from poolq.worker.engine.requests import EncodeRequest
from poolq.worker.engine.scheduler import Scheduler
from poolq.worker.pooling import PoolingParams


def req(loop, n_tokens, *, tasks=("embed",), priority=0, turn=0, rid="r"):
    return EncodeRequest(
        rid,
        [1] * n_tokens,
        False,
        tuple(PoolingParams(t) for t in tasks),
        priority,
        turn,
        loop.create_future(),
    )


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def test_fills_up_to_token_budget_and_request_cap(loop):
    s = Scheduler(max_batch_tokens=100, max_batch_requests=3)
    s.add([req(loop, 40, turn=i, rid=str(i)) for i in range(6)])
    assert s.queued_tokens == 240
    b1 = s.next_batch(0)
    assert [r.request_id for r in b1] == ["0", "1"]  # 40 + 40; a third would exceed 100
    s2 = Scheduler(max_batch_tokens=1000, max_batch_requests=3)
    s2.add([req(loop, 10, turn=i) for i in range(5)])
    assert len(s2.next_batch(0)) == 3
    assert s.queued_tokens == 160


def test_a_request_larger_than_the_budget_runs_alone(loop):
    s = Scheduler(max_batch_tokens=10, max_batch_requests=8)
    s.add([req(loop, 50, rid="big"), req(loop, 5, turn=1, rid="small")])
    assert [r.request_id for r in s.next_batch(0)] == ["big"]
    assert [r.request_id for r in s.next_batch(0)] == ["small"]


def test_priority_then_turns_then_arrival(loop):
    s = Scheduler(max_batch_tokens=10_000, max_batch_requests=100)
    backlog = [req(loop, 1, turn=k, rid=f"bulk{k}") for k in range(5)]
    s.add(backlog)
    newcomer = req(loop, 1, turn=0, rid="new")
    query = req(loop, 1, priority=10, turn=3, rid="query")
    s.add([newcomer, query])
    order = [r.request_id for r in sorted([*backlog, newcomer, query], key=lambda r: r.order_key())]
    assert order == ["query", "bulk0", "new", "bulk1", "bulk2", "bulk3", "bulk4"]


def test_cancelled_requests_are_dropped_and_free_their_place(loop):
    s = Scheduler(max_batch_tokens=100, max_batch_requests=10)
    a, b, c = req(loop, 5, rid="a"), req(loop, 7, turn=1, rid="b"), req(loop, 3, turn=2, rid="c")
    s.add([a, b, c])
    b.future.cancel()
    assert s.cancel(b)
    assert s.queued_tokens == 8 and s.queued_requests == 2  # freed at once
    a.future.cancel()  # cancelled without telling the scheduler: dropped when reached
    assert [r.request_id for r in s.next_batch(0)] == ["c"]
    assert s.queued_tokens == 0 and s.queued_requests == 0
    assert not s.cancel(c)  # already batched


def test_batch_sorted_by_task_set(loop):
    s = Scheduler(max_batch_tokens=1000, max_batch_requests=10)
    tasks = [("sparse",), ("embed",), ("token_embed", "embed"), ("embed",), ("classify",)]
    s.add([req(loop, 1, tasks=t, turn=i, rid=str(i)) for i, t in enumerate(tasks)])
    assert [r.request_id for r in s.next_batch(0)] == ["1", "3", "2", "0", "4"]


def test_closed_scheduler_returns_none_and_refuses(loop):
    s = Scheduler(10, 10)
    s.close()
    assert s.next_batch(0.01) is None
    with pytest.raises(RuntimeError, match="stopped"):
        s.add([req(loop, 1)])


def test_cancel_queued_then_again_then_batched(loop):
    s = Scheduler(max_batch_tokens=100, max_batch_requests=10)
    a, b = req(loop, 5, rid="a"), req(loop, 7, turn=1, rid="b")
    stranger = req(loop, 2, rid="never-added")
    s.add([a, b])
    b.future.cancel()
    assert s.cancel(b)  # queued: its place is freed
    assert s.queued_tokens == 5 and s.queued_requests == 1
    assert not s.cancel(b)  # already cancelled: nothing freed twice
    assert s.queued_tokens == 5 and s.queued_requests == 1
    assert not s.cancel(stranger)
    assert [r.request_id for r in s.next_batch(0)] == ["a"]  # b dropped when reached
    assert s.queued_tokens == 0 and s.queued_requests == 0  # not decremented twice for b
    assert not s.cancel(a)  # already batched
    assert s.queued_tokens == 0 and s.queued_requests == 0
    assert s.next_batch(0) is None


class _NoScanHeap(list):
    """A heap that refuses to be scanned: heapq and indexing still work (they use the list's
    C API), iteration and ``in`` fail."""

    def __iter__(self):
        raise AssertionError("the heap was scanned")

    def __contains__(self, item):
        raise AssertionError("the heap was scanned")


def test_cancel_does_not_scan_the_heap(loop):
    s = Scheduler(max_batch_tokens=1000, max_batch_requests=100)
    s._heap = _NoScanHeap()
    reqs = [req(loop, 3, turn=i, rid=str(i)) for i in range(50)]
    s.add(reqs)
    for r in reqs[10:40]:
        r.future.cancel()
        assert s.cancel(r)
        assert not s.cancel(r)
    assert s.queued_requests == 20 and s.queued_tokens == 60
    batch = s.next_batch(0)
    assert [r.request_id for r in batch] == [str(i) for i in [*range(10), *range(40, 50)]]
    assert not s.cancel(reqs[0])  # batched
    assert s.queued_requests == 0 and s.queued_tokens == 0
