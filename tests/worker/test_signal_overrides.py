"""Stopping a worker (``PoolqWorker.handle_sig_wait_for_completion``, in
``worker/reliability/arq_overrides.py``): the first SIGTERM / Ctrl-C logs at once that the worker
is draining, with its running jobs and grace period; a second Ctrl-C stops at once and the
running job goes back to the queue with its in-progress mark dropped.

The guards fail when the arq internals the override relies on change; the behaviour runs a real
arq worker against a real redis-server (the handler is called as arq's signal handler would
call it: signals themselves are sent to a real worker process in
``tests/integration/test_worker_failures.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import signal

from arq.connections import create_pool
from arq.constants import in_progress_key_prefix, retry_key_prefix
from arq.worker import Worker, func

from poolq.wire.connection import redis_settings
from poolq.worker.reliability.arq_overrides import SIGNAL_OVERRIDES, PoolqWorker


def _shape(f):
    return [(p.name, p.kind) for p in inspect.signature(f).parameters.values()]


def test_each_signal_override_matches_arqs_method():
    for name in SIGNAL_OVERRIDES:
        ours, theirs = getattr(PoolqWorker, name), getattr(Worker, name, None)
        assert theirs is not None, f"arq.worker.Worker.{name} is gone"
        assert not inspect.iscoroutinefunction(theirs)  # a loop signal handler: plain
        assert _shape(ours) == _shape(theirs), name
        assert name in PoolqWorker.__dict__


def test_what_the_signal_override_relies_on_is_still_there():
    init = inspect.getsource(Worker.__init__)
    # arq installs the override for both signals when there is a grace period
    for sig in ("SIGINT", "SIGTERM"):
        assert f"self._add_signal_handler(signal.{sig}, self.handle_sig_wait_for_completion)" in (
            init
        )
    assert "self._job_completion_wait = job_completion_wait" in init
    # the first signal: stop picking jobs, wait for the running ones, then cancel the rest
    drain = inspect.getsource(Worker.handle_sig_wait_for_completion)
    assert "self.allow_pick_jobs = False" in drain
    assert "self._wait_for_tasks_to_complete(signum=sig)" in drain
    # the second Ctrl-C: handle_sig cancels every running job and the main task
    stop = inspect.getsource(Worker.handle_sig)
    assert "t.cancel()" in stop and "self.main_task and self.main_task.cancel()" in stop
    # a cancelled job is retried (left in the queue) and its in-progress key deleted
    run_job = inspect.getsource(Worker.run_job)
    assert "isinstance(e, (asyncio.CancelledError, RetryJob))" in run_job
    assert "cancelled, will be run again" in run_job
    finish = inspect.getsource(Worker.finish_job)
    assert "delete_keys += [in_progress_key]" in finish
    assert "tr.zrem(self.queue_name, job_id)" in finish.split("if finish:")[1]


async def test_ctrl_c_drains_then_a_second_ctrl_c_hands_the_running_job_back(redis_server, caplog):
    started = asyncio.Event()

    async def slow(ctx):
        started.set()
        await asyncio.sleep(60)

    worker = PoolqWorker(
        functions=[func(slow, name="slow")],
        redis_settings=redis_settings(redis_server.url),
        job_completion_wait=30,
        handle_signals=False,  # pytest keeps its own SIGINT: call the handler as arq would
        poll_delay=0.05,
    )
    pool = await create_pool(redis_settings(redis_server.url))
    try:
        await pool.enqueue_job("slow", _job_id="job-1")
        run = asyncio.ensure_future(worker.async_run())
        await asyncio.wait_for(started.wait(), 30)
        with caplog.at_level(logging.WARNING, logger="poolq.worker"):
            worker.handle_sig_wait_for_completion(signal.SIGINT)
            await asyncio.sleep(0.3)
            assert not run.done() and worker.running_jobs() == 1  # draining: still running
            worker.handle_sig_wait_for_completion(signal.SIGTERM)  # not a forced stop
            await asyncio.sleep(0.2)
            assert not run.done()
            worker.handle_sig_wait_for_completion(signal.SIGINT)
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(run, 10)
            # as Worker.run() does next (close(), minus the second cancel close() adds when
            # arq does not own the signals): the cancelled job finishes its bookkeeping
            await asyncio.wait_for(asyncio.gather(*worker.tasks.values()), 10)
        lines = [r.getMessage() for r in caplog.records if r.name == "poolq.worker"]
        assert lines[0].startswith("SIGINT: draining: 1 job running, 30s grace"), lines
        assert "Ctrl-C again to stop now" in lines[0]
        assert lines[1].startswith("SIGTERM: already draining (1 jobs running)"), lines
        assert lines[2].startswith("SIGINT again: stopping now; 1 running job goes back"), lines
        assert await pool.exists(in_progress_key_prefix + "job-1") == 0
        assert await pool.zscore("arq:queue", "job-1") is not None  # queued for another worker
        assert await pool.get(retry_key_prefix + "job-1") == b"1"  # its one try so far
    finally:
        await pool.aclose()
        if worker._pool is not None:
            await worker.pool.aclose()
