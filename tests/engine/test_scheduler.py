"""Scheduler unit tests: token budget, request cap, lanes, fair share, cancellation, task order."""

import asyncio

import pytest

from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.engine.batching.requests import EncodeRequest, anonymous_group
from poolq.worker.engine.batching.scheduler import Scheduler
from poolq.worker.pooling import PoolingParams


def req(loop, n_tokens, *, tasks=("embed",), lane=Lane.BULK, group=None, rid="r"):
    return EncodeRequest(
        rid,
        [1] * n_tokens,
        False,
        tuple(PoolingParams(t) for t in tasks),
        lane,
        loop.create_future(),
        group if group is not None else anonymous_group(),
    )


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def test_fills_up_to_token_budget_and_request_cap(loop):
    s = Scheduler(max_batch_tokens=100, max_batch_requests=3)
    s.add([req(loop, 40, rid=str(i)) for i in range(6)])
    assert s.queued_tokens == 240
    b1 = s.next_batch(0)
    assert [r.request_id for r in b1] == ["0", "1"]  # 40 + 40; a third would exceed 100
    s2 = Scheduler(max_batch_tokens=1000, max_batch_requests=3)
    s2.add([req(loop, 10) for i in range(5)])
    assert len(s2.next_batch(0)) == 3
    assert s.queued_tokens == 160


def test_a_request_larger_than_the_budget_runs_alone(loop):
    s = Scheduler(max_batch_tokens=10, max_batch_requests=8)
    s.add([req(loop, 50, rid="big"), req(loop, 5, rid="small")])
    assert [r.request_id for r in s.next_batch(0)] == ["big"]
    assert [r.request_id for r in s.next_batch(0)] == ["small"]


def ids(batch):
    return [r.request_id for r in batch]


def test_lanes_first_then_arrival(loop):
    s = Scheduler(max_batch_tokens=10_000, max_batch_requests=100)
    s.add([req(loop, 1, rid=f"bulk{k}") for k in range(3)])
    s.add([req(loop, 1, lane=Lane.INTERACTIVE, rid="small")])
    s.add([req(loop, 1, lane=Lane.QUERY, rid="query")])
    assert ids(s.next_batch(0)) == ["query", "small", "bulk0", "bulk1", "bulk2"]


def test_a_job_behind_a_backlog_joins_the_next_batch(loop):
    """Fair share by tokens (lanes.py): a newcomer's first chunk is cut next, not after the
    backlog; then the two jobs alternate by tokens."""
    s = Scheduler(max_batch_tokens=200, max_batch_requests=100)
    s.add([req(loop, 100, group="backlog", rid=f"b{k}") for k in range(10)])
    assert ids(s.next_batch(0)) == ["b0", "b1"]
    s.add([req(loop, 100, group="newcomer", rid=f"n{k}") for k in range(3)])
    assert ids(s.next_batch(0)) == ["n0", "b2"]
    assert ids(s.next_batch(0)) == ["n1", "b3"]
    assert ids(s.next_batch(0)) == ["n2", "b4"]
    assert ids(s.next_batch(0)) == ["b5", "b6"]


def test_a_large_newcomer_shares_the_lane_instead_of_taking_it(loop):
    s = Scheduler(max_batch_tokens=100, max_batch_requests=100)
    s.add([req(loop, 50, group="a", rid=f"a{k}") for k in range(20)])
    for _ in range(5):
        s.next_batch(0)  # a0..a9 served: the lane's virtual time moved on
    s.add([req(loop, 50, group="b", rid=f"b{k}") for k in range(20)])
    served = [r.request_id[0] for _ in range(4) for r in s.next_batch(0)]
    assert served.count("a") == served.count("b") == 4


def test_one_caller_with_many_calls_gets_one_share(loop):
    """A job queues its parts as separate calls: its share is still one caller's."""
    s = Scheduler(max_batch_tokens=100, max_batch_requests=100)
    for part in range(4):
        s.add([req(loop, 50, group="many", rid=f"m{part}{k}") for k in range(2)])
    s.add([req(loop, 50, group="one", rid=f"o{k}") for k in range(4)])
    served = [r.request_id[0] for _ in range(4) for r in s.next_batch(0)]
    assert served == ["m", "o", "m", "o", "m", "o", "m", "o"]


def test_cancelled_requests_are_dropped_and_free_their_place(loop):
    s = Scheduler(max_batch_tokens=100, max_batch_requests=10)
    a, b, c = req(loop, 5, rid="a"), req(loop, 7, rid="b"), req(loop, 3, rid="c")
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
    s.add([req(loop, 1, tasks=t, rid=str(i)) for i, t in enumerate(tasks)])
    assert [r.request_id for r in s.next_batch(0)] == ["1", "3", "2", "0", "4"]


def test_closed_scheduler_returns_none_and_refuses(loop):
    s = Scheduler(10, 10)
    s.close()
    assert s.next_batch(0.01) is None
    with pytest.raises(RuntimeError, match="stopped"):
        s.add([req(loop, 1)])


def test_cancel_queued_then_again_then_batched(loop):
    s = Scheduler(max_batch_tokens=100, max_batch_requests=10)
    a, b = req(loop, 5, rid="a"), req(loop, 7, rid="b")
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
    reqs = [req(loop, 3, rid=str(i)) for i in range(50)]
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


def test_the_query_slot_takes_only_queries_and_each_whole(loop):
    """``next_batch(max_lane=QUERY)`` (the engine's query slot) cuts queries only, in its own
    budget, never a chunk of a prompt; the other lanes wait for the main slot."""
    s = Scheduler(max_batch_tokens=100, max_batch_requests=8)
    s.chunked_prefill = True
    s.add([req(loop, 30, rid="bulk"), req(loop, 5, lane=Lane.INTERACTIVE, rid="small")])
    s.add([req(loop, 150, lane=Lane.QUERY, rid="long query"), req(loop, 5, lane=Lane.QUERY)])
    assert ids(s.next_batch(0, max_lane=Lane.QUERY, max_tokens=50)) == ["long query"]  # whole
    assert ids(s.next_batch(0, max_lane=Lane.QUERY, max_tokens=50)) == ["r"]
    assert s.next_batch(0, max_lane=Lane.QUERY, max_tokens=50) is None
    assert ids(s.next_batch(0)) == ["small", "bulk"]


def test_a_prompt_in_chunks_stays_with_the_main_slot(loop):
    s = Scheduler(max_batch_tokens=100, max_batch_requests=8)
    s.chunked_prefill = True
    s.add([req(loop, 250, lane=Lane.QUERY, rid="q")])
    first = s.next_batch(0)  # the main slot cuts the first 100 tokens; q stays at the head
    assert ids(first) == ["q"] and first[0].scheduled_span == (0, 100)
    assert s.next_batch(0, max_lane=Lane.QUERY) is None  # not the query slot's to continue
    assert s.next_batch(0)[0].scheduled_span == (100, 200)


def test_backlog_by_lane(loop):
    s = Scheduler(max_batch_tokens=1000, max_batch_requests=8)
    s.add([req(loop, 30), req(loop, 7, lane=Lane.INTERACTIVE), req(loop, 4, lane=Lane.QUERY)])
    assert s.backlog(queries=True) == (4, 1)
    assert s.backlog(queries=False) == (37, 2)
    s.next_batch(0, max_lane=Lane.QUERY)
    assert s.backlog(queries=True) == (0, 0) and s.queued_tokens == 37
