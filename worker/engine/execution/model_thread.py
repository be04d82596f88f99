"""The engine's batch slots, one thread each: a slot cuts batches from the engine's one scheduler,
launches each (on the CPU through the process's compute thread, ``compute_thread.py``; on CUDA
from its thread) and finishes the previous one meanwhile, then hands the results to the event
loop. Progress per group is recorded as batches are cut and finished (``group_progress.py``).

An engine has two slots over the same queue: ``poolq-model`` takes work of every lane in the
scheduler's order; ``poolq-query`` takes only queries (``Lane.QUERY``), in small batches. While
a long ingestion batch runs, a query is cut at once by the query slot, and its forward passes
ahead on the compute thread (its lane is the most urgent there); it does not wait for the
batch to end. A batch of queries only, from either slot, is counted apart (``query_stats``, ``query``
lane)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.engine.batching.requests import EncodeRequest, EncodeResult
from poolq.worker.engine.engine_api import EngineObserver
from poolq.worker.engine.execution.compute_thread import CPU_COMPUTE
from poolq.worker.engine.execution.runner import BatchOutputs
from poolq.worker.engine.execution.thread_names import name_os_thread

if TYPE_CHECKING:
    from poolq.worker.engine.engine import AsyncEngine

log = logging.getLogger("poolq.worker.engine.engine")


@dataclass
class BatchSlot:
    """What one slot takes from the scheduler, and where its batches are counted."""

    name: str  # its thread's
    max_lane: Lane | None = None  # None: every lane
    max_tokens: int | None = None  # None: the scheduler's batch budget

    @property
    def queries(self) -> bool:
        return self.max_lane == Lane.QUERY


def _of_queries(batch: list[EncodeRequest]) -> bool:
    """A batch of queries only (whichever slot cut it) counts in the query lane."""
    return all(r.lane == Lane.QUERY for r in batch)


def _observer(engine: AsyncEngine, batch: list[EncodeRequest]) -> EngineObserver | None:
    return engine.query_observer if _of_queries(batch) else engine.observer


def model_loop(engine: AsyncEngine, slot: BatchSlot) -> None:
    """Cut a batch, launch it, then finish the previous one: on CUDA the previous batch's
    device-to-host copies complete while this batch's kernels are queued."""
    name_os_thread(slot.name)
    assert engine.event_loop is not None
    in_flight: tuple[list[EncodeRequest], BatchOutputs, float, list[float]] | None = None
    while True:
        if in_flight is None and not slot.queries:
            engine.groups.busy = False  # about to wait for work
        batch = engine.scheduler.next_batch(
            timeout_s=0 if in_flight else None, max_lane=slot.max_lane, max_tokens=slot.max_tokens
        )
        if batch is None:
            if in_flight is not None:
                _finish(engine, slot, *in_flight)
                in_flight = None
            elif engine.scheduler.closed:
                return
            continue
        engine.notify_space()
        if not slot.queries:  # a job's stall clock reads the ingestion slot's activity
            engine.groups.last_activity = time.monotonic()
            engine.groups.busy = True
        t0 = time.perf_counter()
        waits: list[float] = []
        if _observer(engine, batch) is not None:
            cut = time.monotonic()
            waits = [cut - r.queued_at for r in batch]
        try:
            launched = _launch(engine, batch)
        except Exception as exc:
            log.exception("batch of %d texts failed", len(batch))
            engine.event_loop.call_soon_threadsafe(_fail, batch, exc)
            continue
        if in_flight is not None:
            _finish(engine, slot, *in_flight)
        in_flight = (batch, launched, t0, waits)


def _launch(engine: AsyncEngine, batch: list[EncodeRequest]) -> BatchOutputs:
    """On the CPU the forward runs on the process's compute thread (one OpenMP team for all
    engines, ``compute_thread.py``); this thread waits for it. CUDA launches from here."""
    if engine.model.device.type == "cpu":
        lane = min(r.lane for r in batch)  # the batch runs in its most urgent lane
        return CPU_COMPUTE.run(engine.runner.launch, batch, lane=lane)
    return engine.runner.launch(batch)


def _finish(
    engine: AsyncEngine,
    slot: BatchSlot,
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
    s = engine.query_stats if _of_queries(batch) else engine.stats
    s.batches += 1
    s.texts += len(batch)
    tokens = sum(r.num_tokens for r in batch)
    s.tokens += tokens
    s.forward_s += time.perf_counter() - t0
    groups = {r.group for r in batch}
    if len(groups) > 1:
        s.multi_group_batches += 1
    if not slot.queries:
        engine.groups.served(groups)  # progress per group (a job's stall clock reads it)
    if s.batch_sizes is not None:
        s.batch_sizes.append(len(batch))
    engine.event_loop.call_soon_threadsafe(_resolve, batch, results, s.batches - 1)
    if (observer := _observer(engine, batch)) is not None:
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
