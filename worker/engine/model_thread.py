"""The engine's model thread (``poolq-model``): it cuts batches from the engine's scheduler,
launches each (on the CPU through the process's compute thread, ``compute_thread.py``; on CUDA
from here) and finishes the previous one meanwhile, then hands the results to the event loop.
Progress per caller is recorded as batches are cut and finished (``group_progress.py``)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from poolq.worker.engine.compute_thread import CPU_COMPUTE
from poolq.worker.engine.requests import EncodeRequest, EncodeResult
from poolq.worker.engine.runner import BatchOutputs
from poolq.worker.engine.thread_names import name_os_thread

if TYPE_CHECKING:
    from poolq.worker.engine.engine import AsyncEngine

log = logging.getLogger("poolq.worker.engine.engine")


def model_loop(engine: AsyncEngine) -> None:
    """Cut a batch, launch it, then finish the previous one: on CUDA the previous batch's
    device-to-host copies complete while this batch's kernels are queued."""
    name_os_thread("poolq-model")
    assert engine.event_loop is not None
    in_flight: tuple[list[EncodeRequest], BatchOutputs, float, list[float]] | None = None
    while True:
        if in_flight is None:
            engine.groups.busy = False  # about to wait for work
        batch = engine.scheduler.next_batch(timeout_s=0 if in_flight else None)
        if batch is None:
            if in_flight is not None:
                _finish(engine, *in_flight)
                in_flight = None
                continue
            if engine.scheduler.closed:
                return
            continue
        engine.notify_space()
        engine.groups.last_activity = time.monotonic()
        engine.groups.busy = True
        t0 = time.perf_counter()
        waits: list[float] = []
        if engine.observer is not None:
            cut = time.monotonic()
            waits = [cut - r.queued_at for r in batch]
        try:
            launched = _launch(engine, batch)
        except Exception as exc:
            log.exception("batch of %d texts failed", len(batch))
            engine.event_loop.call_soon_threadsafe(_fail, batch, exc)
            continue
        if in_flight is not None:
            _finish(engine, *in_flight)
        in_flight = (batch, launched, t0, waits)


def _launch(engine: AsyncEngine, batch: list[EncodeRequest]) -> BatchOutputs:
    """On the CPU the forward runs on the process's compute thread (one OpenMP team for all
    engines, ``compute_thread.py``); this thread waits for it. CUDA launches from here."""
    if engine.model.device.type == "cpu":
        lane = min(r.lane for r in batch)  # the batch runs in its most urgent lane
        return CPU_COMPUTE.run(engine.runner.launch, batch, priority=int(lane))
    return engine.runner.launch(batch)


def _finish(
    engine: AsyncEngine,
    batch: list[EncodeRequest],
    launched: BatchOutputs,
    t0: float,
    waits: list[float],
) -> None:
    assert engine.event_loop is not None
    try:
        results = launched.wait()
    except Exception as exc:
        log.exception("batch of %d texts failed", len(batch))
        engine.event_loop.call_soon_threadsafe(_fail, batch, exc)
        return
    s = engine.stats
    s.batches += 1
    s.texts += len(batch)
    tokens = sum(r.num_tokens for r in batch)
    s.tokens += tokens
    s.forward_s += time.perf_counter() - t0
    groups = {r.group for r in batch}
    if len(groups) > 1:
        s.multi_group_batches += 1
    engine.groups.served(groups)  # progress per caller (a job's stall clock reads it)
    if s.batch_sizes is not None:
        s.batch_sizes.append(len(batch))
    engine.event_loop.call_soon_threadsafe(_resolve, batch, results, s.batches - 1)
    if (observer := engine.observer) is not None:
        try:
            observer.batch(tokens, waits, launched.forward_s, launched.pool_s)
        except Exception:  # metrics must never stop the model thread
            log.exception("engine observer failed")


def _resolve(batch: list[EncodeRequest], results: list[dict | None], batch_index: int) -> None:
    for req, outputs in zip(batch, results, strict=True):
        if outputs is None:  # a chunk of a longer prompt: the request continues in a later batch
            continue
        if not req.future.done():
            req.future.set_result(
                EncodeResult(req.request_id, outputs, req.num_tokens, req.truncated, batch_index)
            )


def _fail(batch: list[EncodeRequest], exc: Exception) -> None:
    for req in batch:
        if not req.future.done():
            req.future.set_exception(exc)
