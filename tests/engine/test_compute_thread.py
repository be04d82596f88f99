"""The CPU compute thread: every CPU forward and model load on one thread (one OpenMP team),
query lanes first, results and errors handed back, thread count carried over."""

import asyncio
import threading

import pytest
import torch

from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine
from poolq.worker.engine.execution.compute_thread import CPU_COMPUTE, ComputeThread
from tests.cpu import LENIENT_INT8


def test_returns_raises_and_runs_nested_calls_inline():
    ct = ComputeThread("test-compute")
    assert ct.run(lambda a, b: a + b, 2, 3) == 5
    with pytest.raises(ZeroDivisionError):
        ct.run(lambda: 1 / 0)
    # a call from the compute thread itself must not wait for itself
    assert ct.run(lambda: ct.run(lambda: threading.current_thread().name)) == "test-compute"
    assert ct.run(ct.on_thread) and not ct.on_thread()


def test_query_lane_passes_queued_ingest_work():
    ct = ComputeThread("test-order")
    gate, started = threading.Event(), threading.Event()
    order: list[str] = []

    def hold() -> None:
        started.set()
        gate.wait(5)

    blocker = threading.Thread(target=ct.run, args=(hold,))
    blocker.start()
    assert started.wait(5)
    callers = [
        threading.Thread(target=ct.run, args=(order.append, "ingest 1")),
        threading.Thread(target=ct.run, args=(order.append, "ingest 2")),
        threading.Thread(target=lambda: ct.run(order.append, "query", lane=Lane.QUERY)),
    ]
    for t in callers:  # queued one after the other while the compute thread is busy
        t.start()
        while ct._queue.qsize() < callers.index(t) + 1:
            pass
    gate.set()
    for t in (blocker, *callers):
        t.join(5)
    assert order == ["query", "ingest 1", "ingest 2"]


def test_a_running_job_lets_queued_query_work_run_at_its_safe_points():
    ct = ComputeThread("test-yield")
    order: list[str] = []
    queued = threading.Event()

    def long_ingest_forward() -> None:
        order.append("ingest starts")
        ct.yield_to_urgent()  # nothing queued yet: no-op
        assert queued.wait(5)
        while ct._queue.qsize() < 2:
            pass
        ct.yield_to_urgent()  # a layer boundary: the query runs here, the other ingest does not
        order.append("ingest ends")

    first = threading.Thread(target=ct.run, args=(long_ingest_forward,))
    first.start()
    while not order:
        pass
    later = threading.Thread(target=ct.run, args=(order.append, "next ingest"))
    query = threading.Thread(
        target=ct.run, args=(order.append, "query"), kwargs={"lane": Lane.QUERY}
    )
    later.start()
    query.start()
    queued.set()
    for t in (first, later, query):
        t.join(5)
    assert order == ["ingest starts", "query", "ingest ends", "next ingest"]
    ct.yield_to_urgent()  # off the compute thread: no-op


def test_callers_thread_count_applies_on_the_compute_thread():
    ct = ComputeThread("test-threads")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert ct.run(torch.get_num_threads) == 1
        torch.set_num_threads(2)
        assert ct.run(torch.get_num_threads) == 2
    finally:
        torch.set_num_threads(before)


async def test_cpu_loads_and_every_engines_forwards_run_on_the_compute_thread(minilm):
    seen: list[str] = []

    def record(*_args: object) -> None:
        seen.append(threading.current_thread().name)

    model = load_model(ModelConfig(minilm))
    assert model.device.type == "cpu"
    handle = model.encoder.register_forward_pre_hook(record)
    try:
        async with (
            AsyncEngine(model) as ingest,
            AsyncEngine(model, lane=Lane.QUERY) as q,
        ):
            await asyncio.gather(ingest.encode(["a text", "another"]), q.encode(["a query"]))
    finally:
        handle.remove()
    assert len(seen) >= 2
    assert set(seen) == {CPU_COMPUTE.name}, seen


def test_int8_gate_runs_on_the_compute_thread(minilm, monkeypatch):
    from poolq.worker.engine.cpu import int8_gate

    seen: list[str] = []
    real = int8_gate.encode_texts

    def spy(*args, **kw):
        seen.append(threading.current_thread().name)
        return real(*args, **kw)

    monkeypatch.setattr(int8_gate, "encode_texts", spy)
    load_model(ModelConfig(minilm, dtype="int8", int8_floors=LENIENT_INT8))  # not its subject
    assert seen == [CPU_COMPUTE.name] * 2  # the fp32 reference and the int8 pass
