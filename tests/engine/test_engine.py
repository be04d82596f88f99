"""Engine behaviour: batch invariance, continuous batching, priority, cancellation, errors."""

import asyncio
import random
import threading
import time

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.engine.checkpoints.loader import ModelConfig, load_model
from poolq.worker.engine.engine import AsyncEngine, InputTooLongError
from poolq.worker.pooling import PoolingParams, PoolingParamsError, SparseEmbedding
from tests.texts import varied_texts

TEXTS = varied_texts(64, seed=3)
ALL_TASKS = ("embed", "sparse", "token_embed")
VOCAB = 30522


def assert_same(a, b, atol=1e-5):
    if isinstance(a, SparseEmbedding):
        assert isinstance(b, SparseEmbedding)
        big_a, big_b = a.indices[a.values > 1e-4].tolist(), b.indices[b.values > 1e-4].tolist()
        assert big_a == big_b
        torch.testing.assert_close(a.to_dense(VOCAB), b.to_dense(VOCAB), atol=atol, rtol=1e-4)
    else:
        torch.testing.assert_close(a, b, atol=atol, rtol=1e-4)


@pytest.fixture(scope="module")
def multi_model(multi_head):
    return load_model(ModelConfig(multi_head))


@pytest.fixture(scope="module")
def minilm_model(minilm):
    return load_model(ModelConfig(minilm))


@pytest.fixture(scope="module")
def alone_results(multi_model):
    async def run():
        async with AsyncEngine(multi_model) as engine:
            return [await engine.encode_one(t, ALL_TASKS) for t in TEXTS]

    return asyncio.run(run())


async def test_multi_head_model_serves_three_tasks_from_one_forward(multi_model):
    assert set(multi_model.description.supported_tasks) == set(ALL_TASKS)
    async with AsyncEngine(multi_model) as engine:
        r = await engine.encode_one("one forward, three outputs", ALL_TASKS)
        assert engine.stats.batches == 1 and engine.stats.texts == 1
    assert r["embed"].shape == (384,)
    assert isinstance(r["sparse"], SparseEmbedding)
    assert r["token_embed"].shape == (r.num_tokens - 1, 128)  # BGE-M3 ColBERT drops CLS


async def test_batch_invariance_alone_vs_batch_of_64_vs_mixed_tasks(multi_model, alone_results):
    async with AsyncEngine(multi_model, max_batch_requests=64, record_batches=True) as engine:
        batched = await engine.encode(TEXTS, ALL_TASKS)
        assert max(engine.stats.batch_sizes) > 1
        # mixed: every text asks a different subset of tasks, all in one batch
        rng = random.Random(0)
        subsets = [tuple(t for t in ALL_TASKS if rng.random() < 0.6) or ("sparse",) for _ in TEXTS]
        mixed = await engine.encode(TEXTS, subsets)
    for i, (a, b, m) in enumerate(zip(alone_results, batched, mixed, strict=True)):
        for task in ALL_TASKS:
            assert_same(b[task], a[task]), f"text {i} task {task}"
        for task in subsets[i]:
            assert_same(m[task], a[task])
        assert set(m.outputs) == set(subsets[i])


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_random_arrival_orders_give_the_same_outputs(multi_model, alone_results, data):
    """Concurrent callers submit random slices in random order and at random moments."""
    n_callers = data.draw(st.integers(1, 5))
    picks = [
        data.draw(st.lists(st.integers(0, len(TEXTS) - 1), min_size=1, max_size=12))
        for _ in range(n_callers)
    ]
    tasks = [
        data.draw(st.lists(st.sampled_from(ALL_TASKS), min_size=1, max_size=3, unique=True))
        for _ in range(n_callers)
    ]
    delays = [data.draw(st.floats(0, 0.02)) for _ in range(n_callers)]
    budget = data.draw(st.sampled_from([64, 256, 4096]))

    async def caller(engine, idx, ts, delay):
        await asyncio.sleep(delay)
        return await engine.encode([TEXTS[i] for i in idx], ts)

    async def run():
        async with AsyncEngine(multi_model, max_batch_tokens=budget) as engine:
            return await asyncio.gather(
                *(caller(engine, p, t, d) for p, t, d in zip(picks, tasks, delays, strict=True))
            )

    results = asyncio.run(run())
    for idx, ts, res in zip(picks, tasks, results, strict=True):
        for i, r in zip(idx, res, strict=True):
            for task in ts:
                assert_same(r[task], alone_results[i][task])


async def test_newcomer_joins_the_next_batch_not_the_end_of_the_backlog(minilm_model):
    async with AsyncEngine(minilm_model, max_batch_requests=8) as engine:
        backlog = asyncio.create_task(engine.encode(varied_texts(200, seed=5), ["embed"]))
        while engine.stats.batches < 2:
            await asyncio.sleep(0.001)
        submitted_at = engine.stats.batches
        newcomer = await engine.encode_one(
            "a request that arrives while the backlog runs", ["embed"]
        )
        done = await backlog
    last_backlog_batch = max(r.batch_index for r in done)
    assert last_backlog_batch >= 20
    assert newcomer.batch_index <= submitted_at + 2, (newcomer.batch_index, submitted_at)


async def test_priority_request_overtakes_2000_queued_bulk_requests(minilm_model):
    bulk_texts = [f"bulk document number {i} about topic {i % 17}" for i in range(2000)]
    async with AsyncEngine(minilm_model, max_batch_requests=64) as engine:
        bulk = asyncio.create_task(engine.encode(bulk_texts, ["embed"]))
        while engine.scheduler.queued_requests < 1000:  # the bulk is queued
            await asyncio.sleep(0.001)
        submitted_at = engine.stats.batches
        await engine.encode_one("what is topic 3?", ["embed"], lane=Lane.QUERY)
        answered_at = engine.stats.batches
        results = await bulk
    assert max(r.batch_index for r in results) > submitted_at + 10
    assert answered_at <= submitted_at + 2, (answered_at, submitted_at)
    assert engine.query_stats.batches <= 1  # the main slot may have taken it first


async def test_a_query_does_not_wait_for_the_ingestion_batch_running(minilm_model):
    """One engine serves both: while one large bulk batch runs (about a second of work), the
    query slot cuts the query and its forward passes ahead at the encoder's safe points."""
    bulk_texts = [f"bulk document number {i} about topic {i % 17} " * 6 for i in range(1500)]
    async with AsyncEngine(
        minilm_model, max_batch_tokens=1 << 16, max_batch_requests=4096
    ) as engine:
        bulk = asyncio.create_task(engine.encode(bulk_texts, ["embed"]))
        while engine.scheduler.queued_requests or not engine.groups.busy:
            await asyncio.sleep(0.001)  # the one bulk batch is cut and running
        t0 = time.perf_counter()
        query = await engine.encode_one("what is topic 3?", ["embed"], lane=Lane.QUERY)
        waited = time.perf_counter() - t0
        assert engine.stats.batches == 0, "the query waited for the bulk batch"
        assert engine.query_stats.batches == 1
        results = await bulk
    assert query.tensor("embed").shape == (384,) and len(results) == 1500
    assert waited < 2.0


async def test_a_caller_waiting_its_turn_counts_as_moving(minilm_model):
    """Deadlines read ``progress_of``: a job queued behind others moves while the engine does;
    once its requests are done, its last computed request is what counts."""
    backlog = [f"bulk document number {i} about topic {i % 17}" for i in range(600)]
    async with AsyncEngine(minilm_model, max_batch_requests=32) as engine:
        assert engine.progress_of("late") is None
        first = asyncio.create_task(engine.encode(backlog, ["embed"], group="early"))
        while engine.scheduler.queued_requests < 300:
            await asyncio.sleep(0.001)
        late = asyncio.create_task(engine.encode(backlog[:40], ["embed"], group="late"))
        await asyncio.sleep(0.05)
        t0 = time.monotonic()
        while engine.stats.batches < 5:
            await asyncio.sleep(0.01)
        assert engine.progress_of("late") >= t0 - 0.05 or late.done()
        await asyncio.gather(first, late)
        done_at = engine.progress_of("late")
        assert done_at == engine.groups.served_at["late"]
        await asyncio.sleep(0.2)
        assert engine.progress_of("late") == done_at  # nothing pending: it no longer moves
        engine.forget_group("late")
        assert engine.progress_of("late") is None


async def test_cancelling_frees_the_queue_place(minilm_model):
    engine = AsyncEngine(minilm_model, queue_limit_tokens=40, record_batches=True)
    gate = threading.Event()
    ran: list[str] = []
    real_launch = engine.runner.launch

    def gated_launch(batch):
        ran.extend(r.request_id for r in batch)
        gate.wait(10)
        return real_launch(batch)

    engine.runner.launch = gated_launch  # type: ignore[method-assign]
    async with engine:
        first = asyncio.create_task(engine.encode(["first"], request_ids=["first"]))
        while not ran:  # the model thread holds the first batch
            await asyncio.sleep(0.001)
        queued = asyncio.create_task(
            engine.encode(["word " * 30], request_ids=["queued"])
        )  # 32 tokens
        while engine.scheduler.queued_tokens == 0:
            await asyncio.sleep(0.001)
        waiting = asyncio.create_task(
            engine.encode(["word " * 20], request_ids=["waiting"])
        )  # 22 tokens: over 40
        await asyncio.sleep(0.05)
        assert engine.scheduler.queued_requests == 1, "backpressure holds the third caller"
        queued.cancel()
        for _ in range(500):
            if engine.scheduler.queued_requests == 1 and engine.scheduler.queued_tokens == 22:
                break
            await asyncio.sleep(0.002)
        assert engine.scheduler.queued_tokens == 22, (
            "the cancelled place went to the waiting caller"
        )
        gate.set()
        await first
        assert (await waiting)[0].num_tokens == 22
    assert "queued" not in ran


async def test_event_loop_stays_responsive_during_forward(minilm_model):
    """The forwards run beside the event loop: it gets a turn while each batch computes (a
    loop blocked for a whole forward would see two batch counts go by at once)."""
    seen: set[int] = set()

    async def ticker(engine, stop):
        while not stop.is_set():
            seen.add(engine.stats.batches)
            await asyncio.sleep(0.005)

    async with AsyncEngine(minilm_model, max_batch_tokens=2048) as engine:
        stop = asyncio.Event()
        tick = asyncio.create_task(ticker(engine, stop))
        await engine.encode(varied_texts(150, seed=9), ["embed"])
        stop.set()
        await tick
        batches = engine.stats.batches
    # (the last, a short tail, may end within one tick)
    assert batches >= 3 and set(range(batches - 1)) <= seen, (batches, sorted(seen))


async def test_errors_name_the_request(minilm_model):
    async with AsyncEngine(minilm_model) as engine:
        with pytest.raises(
            InputTooLongError,
            match=r"request 'doc-2': input is longer than the model's max length 256",
        ):
            await engine.encode(
                ["short", "ok", "word " * 400],
                request_ids=["doc-0", "doc-1", "doc-2"],
                truncate=False,
            )
        with pytest.raises(
            PoolingParamsError,
            match=r"request 'q': task 'sparse' is not supported by this model; supported tasks: embed, token_embed",
        ):
            await engine.encode(["x"], ["sparse"], request_ids=["q"])
        with pytest.raises(
            PoolingParamsError, match=r"request '#1': text must be a string, got int"
        ):
            await engine.encode(["x", 5])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="each task may be asked once"):
            await engine.encode(
                ["x"], [PoolingParams("embed"), PoolingParams("embed", dimensions=4)]
            )
        # after errors the engine still works, and truncation is reported
        r = (await engine.encode(["word " * 400]))[0]
        assert r.truncated and r.num_tokens == 256
