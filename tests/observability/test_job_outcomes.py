"""Job outcomes per function from arq's counters, without Redis or processes: the
classification of one job end, and a real :class:`PoolqWorker` whose hooks are driven the way
``Worker.run_job`` drives them (one counter bumped, then ``on_job_end`` awaited; jobs failed
before they run handed to ``failed_unrun`` with arq's serialized result)."""

import asyncio

import pytest
from arq.jobs import serialize_result
from arq.worker import Retry, func

from poolq.wire.serialization import job_deserializer, serialize
from poolq.worker.observability.collector import WorkerMetrics
from poolq.worker.observability.job_outcomes import (
    FUNCTION_KEY,
    JOB_OUTCOMES,
    JobOutcomes,
    function_of,
    labelled,
)
from poolq.worker.reliability.arq_overrides import PoolqWorker


def test_outcome_is_the_arq_counter_that_moved():
    jobs = JobOutcomes()
    assert jobs.arq_job_ended(1, 0, "ingest") == "done"
    assert jobs.arq_job_ended(1, 1, "ingest") == "retried"
    assert jobs.arq_job_ended(1, 1, "ingest") == "failed"  # neither moved: jobs_failed did
    assert jobs.arq_job_ended(2, 1, "reindex") == "done"
    assert jobs.arq_job_ended(2, 1, "reindex") == "failed"
    assert jobs[("ingest", "done")] == 1
    assert jobs[("ingest", "retried")] == 1
    assert jobs[("ingest", "failed")] == 1
    assert jobs[("reindex", "done")] == 1
    assert jobs[("reindex", "failed")] == 1
    assert jobs[("reindex", "retried")] == 0


def test_ingest_and_reindex_start_at_zero_for_every_outcome():
    counts = JobOutcomes().snapshot()
    assert counts == {(f, o): 0 for f in ("ingest", "reindex") for o in JOB_OUTCOMES}


async def _job(ctx, outcome="done", gate=None):
    """A job that ends as asked (after ``gate`` is set, when given)."""
    if gate is not None:
        await gate.wait()
    if outcome == "failed":
        raise RuntimeError("boom")
    if outcome == "retried":
        raise Retry(defer=1)
    if outcome == "cancelled":  # shutdown: arq puts it back in the queue
        raise asyncio.CancelledError
    return ctx[FUNCTION_KEY]


def _worker() -> PoolqWorker:
    """A PoolqWorker as ``poolq worker`` builds one (constructing it opens no connection)."""
    return PoolqWorker(
        # labelled where each func is built, as job_guard.guarded_function does
        functions=[
            func(labelled(_job, n.split(":")[0]), name=n)
            for n in ("ingest", "other", "reindex:docs:0")
        ],
        queue_name="poolq:test",
        handle_signals=False,
        job_serializer=serialize,
        job_deserializer=job_deserializer(1 << 20),
    )


async def _run(worker: PoolqWorker, name: str, outcome: str = "done", gate=None) -> None:
    """What ``Worker.run_job`` does around a job that runs: the job's coroutine (labelled
    where its ``func`` was built), one of arq's counters bumped by arq's rules, then
    ``on_job_end``."""
    ctx = {"job_id": name, "job_try": 1}
    try:
        assert await worker.functions[name].coroutine(ctx, outcome, gate) == name.split(":")[0]
    except (Retry, asyncio.CancelledError):
        worker.jobs_retried += 1
    except Exception:
        worker.jobs_failed += 1
    else:
        worker.jobs_complete += 1
    assert worker.on_job_end is not None
    await worker.on_job_end(ctx)


def _failed_unrun(worker: PoolqWorker, function: str | None) -> None:
    """What ``PoolqWorker.finish_failed_job`` hands its listeners: arq's serialized result."""
    worker.jobs_failed += 1
    data = None
    if function is not None:
        data = serialize_result(
            function,
            (),
            {},
            2,
            0,
            False,
            RuntimeError("max 1 retries exceeded"),
            0,
            0,
            f"j:{function}",
            "poolq:test",
            job_id="j",
            serializer=worker.job_serializer,
        )
    for listener in worker.failed_unrun:
        listener(data)


def test_hooked_worker_counts_each_outcome_per_function():
    async def drive() -> WorkerMetrics:
        worker = _worker()
        ended: list[str] = []

        async def earlier_hook(ctx):
            ended.append(ctx["job_id"])

        worker.on_job_end = earlier_hook
        worker.jobs_complete, worker.jobs_retried = 7, 3  # jobs before the hook: not counted
        m = WorkerMetrics()
        m.hook_arq(worker)
        assert len(worker.failed_unrun) == 1
        for outcome in ("done", "done", "failed", "retried", "cancelled"):
            await _run(worker, "ingest", outcome)
        await _run(worker, "other", "failed")
        await _run(worker, "reindex:docs:0", "done")
        await _run(worker, "reindex:docs:0", "failed")
        _failed_unrun(worker, "reindex:docs:0")  # max tries exceeded: named in the result
        _failed_unrun(worker, "<unknown>")  # job expired before arq read its function
        _failed_unrun(worker, None)
        await _run(worker, "ingest", "done")  # the unrun failures did not shift the baseline
        assert ended == ["ingest"] * 5 + ["other"] + ["reindex:docs:0"] * 2 + ["ingest"]
        return m

    m = asyncio.run(drive())
    assert m.jobs.snapshot() == {
        ("ingest", "done"): 3,
        ("ingest", "failed"): 1,
        ("ingest", "retried"): 2,
        ("other", "failed"): 1,
        ("reindex", "done"): 1,
        ("reindex", "failed"): 2,
        ("reindex", "retried"): 0,
        ("unknown", "failed"): 2,
    }


def test_interleaved_jobs_each_see_their_own_counter():
    """Several jobs run at once and end in another order; each one's hook runs right after its
    own counter moved."""

    async def drive() -> JobOutcomes:
        worker = _worker()
        m = WorkerMetrics()
        m.hook_arq(worker)
        plan = [("ingest", "retried"), ("other", "done"), ("ingest", "failed"), ("other", "done")]
        gates = [asyncio.Event() for _ in plan]
        tasks = [
            asyncio.create_task(_run(worker, name, outcome, gate))
            for (name, outcome), gate in zip(plan, gates, strict=True)
        ]
        await asyncio.sleep(0)
        for gate in reversed(gates):
            gate.set()
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        return m.jobs

    jobs = asyncio.run(drive())
    assert jobs[("ingest", "retried")] == 1
    assert jobs[("ingest", "failed")] == 1
    assert jobs[("ingest", "done")] == 0
    assert jobs[("other", "done")] == 2


def test_wrapper_keeps_the_job_function():
    async def ingest_docs(ctx, *docs, flag=False):
        """Docs."""
        return len(docs), flag

    wrapped = labelled(ingest_docs, "ingest")
    assert wrapped.__name__ == "ingest_docs" and wrapped.__doc__ == "Docs."
    ctx: dict = {}
    assert asyncio.run(wrapped(ctx, "a", "b", flag=True)) == (2, True)
    assert ctx[FUNCTION_KEY] == "ingest"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (None, "unknown"),
        (b"", "unknown"),
        (b"\x00 not msgpack", "unknown"),
    ],
)
def test_function_of_unreadable_results_is_unknown(data, expected):
    assert function_of(data, job_deserializer(1 << 20)) == expected
