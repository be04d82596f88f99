"""Runs one batch: flat token ids -> one packed forward -> pooler -> host outputs.

A text that wants several tasks is computed once: the pooling metadata lists one pooling request
per (text, task), all pointing at the text's rows. Requests are laid out task by task (the
scheduler sorted texts by task set), so each task's rows are one slice when possible.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

import torch

from poolq.worker.engine.batching.chunked_prefill import ChunkedPrefills
from poolq.worker.engine.batching.requests import EncodeRequest
from poolq.worker.engine.checkpoints.loader import PoolingModel
from poolq.worker.engine.cpu.cpu_threads import governed_threads
from poolq.worker.pooling import PoolingCursor, PoolingMetadata, PoolingParams, SparseEmbedding
from poolq.worker.pooling.outputs import PoolerOutput
from poolq.worker.pooling.tasks import POOLING_TASKS, PoolingTask


def _copy_to_host(t: torch.Tensor, pinned: bool) -> torch.Tensor:
    if t.device.type == "cpu":
        return t.float() if t.dtype in (torch.bfloat16, torch.float16) else t
    if not pinned:
        return t.cpu()
    host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    return host.copy_(t, non_blocking=True)  # complete once the batch's event has fired


def _to_host(out: PoolerOutput, pinned: bool) -> PoolerOutput:
    if isinstance(out, SparseEmbedding):
        return SparseEmbedding(
            _copy_to_host(out.indices, pinned), _copy_to_host(out.values, pinned)
        )
    if isinstance(out, torch.Tensor):
        return _copy_to_host(out.float(), pinned)
    return out


@dataclass
class BatchOutputs:
    """Host outputs per text. On CUDA the device-to-host copies are asynchronous: call
    :meth:`wait` (after launching the next batch) before reading them.

    ``forward_s`` and ``pool_s``: the encoder forward and the pooler, in seconds. On the CPU they
    are wall-clock times of the calls; on CUDA (with ``ModelRunner.timing``) they come from CUDA
    events around the kernels and are filled in by :meth:`wait`; otherwise they stay 0.
    """

    results: list[dict[PoolingTask, PoolerOutput] | None]  # None: a chunk, not the end
    event: torch.cuda.Event | None = None
    forward_s: float = 0.0
    pool_s: float = 0.0
    timing_events: tuple[torch.cuda.Event, torch.cuda.Event, torch.cuda.Event] | None = None

    def wait(self) -> list[dict[PoolingTask, PoolerOutput] | None]:
        if self.event is not None:
            self.event.synchronize()  # recorded after the timing events: they are done too
        if self.timing_events is not None:
            start, forwarded, pooled = self.timing_events
            self.forward_s = start.elapsed_time(forwarded) / 1000
            self.pool_s = forwarded.elapsed_time(pooled) / 1000
            self.timing_events = None
        return self.results


class ModelRunner:
    def __init__(self, model: PoolingModel) -> None:
        self.model = model
        # causal models: requests in the middle of a chunked prefill (chunked_prefill.py)
        self.prefills = ChunkedPrefills(model.pooler)
        self._causal = bool(getattr(model.encoder, "causal", False))
        self.device = model.device
        self._pin = model.device.type == "cuda"
        self._autocast = model.dtype in (torch.bfloat16, torch.float16)
        self.timing = False  # CUDA: time forward and pool with events (the engine's observer)

    def run(self, batch: list[EncodeRequest]) -> list[dict[PoolingTask, PoolerOutput] | None]:
        """Pooled outputs per text, in batch order, on the host (synchronous)."""
        return self.launch(batch).wait()

    def launch(self, batch: list[EncodeRequest]) -> BatchOutputs:
        """Run the batch; on CUDA the outputs' copies to the host may still be in flight.
        A request whose span ends before its prompt does (chunked prefill) gets ``None``."""
        if self.device.type == "cpu":
            governed_threads()  # CPU: the intra-op thread count chosen for now (cpu_threads.py)
        spans = [r.scheduled_span for r in batch]  # prompt tokens [start, end) of each request
        seq_lens = [end - start for start, end in spans]
        chunked = [r.is_chunked for r in batch]
        if any(chunked) and not self._causal:
            raise ValueError("only a causal model's prompts can be prefilled in chunks")
        starts = [0, *itertools.accumulate(seq_lens)][:-1]
        ids_cpu = torch.tensor(
            [t for r, (a, b) in zip(batch, spans, strict=True) for t in r.token_ids[a:b]],
            dtype=torch.int64,
        )  # [T]
        if self._pin:
            ids_cpu = ids_cpu.pin_memory()
        ids_dev = ids_cpu.to(self.device, non_blocking=True)

        pooler = self.model.pooler
        params: list[PoolingParams] = []
        counts: list[int] = []
        token_starts: list[int] = []
        token_ids: list[torch.Tensor] = []
        owners: list[tuple[int, PoolingTask]] = []
        need_ids = pooler.requires_token_ids
        if self._causal:
            self.prefills.drop_abandoned()
        caches = [
            self.prefills.cache(r) if c else None for r, c in zip(batch, chunked, strict=True)
        ]
        # a final chunk is pooled with what its earlier chunks left (None: not chunked)
        prefix_of = {
            j: self.prefills.finish(r)
            for j, r in enumerate(batch)
            if r.prefill_start > 0 and not r.is_partial_prefill
        }
        for task in POOLING_TASKS:  # task-major: each task's requests adjacent
            for j, r in enumerate(batch):
                if r.is_partial_prefill:
                    continue  # not pooled before the end of its prompt
                for p in r.params:
                    if p.task != task:
                        continue
                    params.append(p)
                    counts.append(seq_lens[j])
                    token_starts.append(starts[j])
                    owners.append((j, task))
                    if need_ids:  # a final chunk's ids: its whole prompt
                        token_ids.append(
                            torch.tensor(r.token_ids[: spans[j][1]], dtype=torch.int64)
                            if j in prefix_of
                            else ids_cpu[starts[j] : starts[j] + seq_lens[j]]
                        )
        cursor = PoolingCursor.build(counts, token_starts=token_starts, device=self.device)
        keep_rows = None
        if any(r.keep_rows_cpu is not None for r in batch):
            keep_rows = tuple(batch[j].keep_rows_cpu for j, _ in owners)
        metadata = PoolingMetadata(
            tuple(params),
            cursor,
            tuple(token_ids) if need_ids else None,
            request_ids=tuple(batch[j].request_id for j, _ in owners),
            keep_rows_cpu=keep_rows,
            prefixes=tuple(prefix_of.get(j) for j, _ in owners) if prefix_of else None,
        )
        encoder_kw: dict[str, Any] = {}
        if any(chunked):
            encoder_kw["caches"] = caches
        if any(r.token_type_ids is not None for r in batch):  # pairs of a cross-encoder
            types_cpu = torch.tensor(
                [
                    t
                    for r, (a, b) in zip(batch, spans, strict=True)
                    for t in (
                        r.token_type_ids[a:b] if r.token_type_ids is not None else [0] * (b - a)
                    )
                ],
                dtype=torch.int64,
            )  # [T]
            encoder_kw["token_type_ids"] = types_cpu.to(self.device, non_blocking=True)
        if any(r.key_mask_cpu is not None for r in batch):  # only then: no cost otherwise
            encoder_kw["key_mask_cpu"] = torch.cat(
                [
                    r.key_mask_cpu
                    if r.key_mask_cpu is not None
                    else torch.ones(r.num_tokens, dtype=torch.bool)
                    for r in batch
                ]
            )  # [T] bool, host
        events = None
        if self._pin and self.timing:
            events = tuple(torch.cuda.Event(enable_timing=True) for _ in range(3))
            events[0].record()
        t0 = time.perf_counter()
        with torch.inference_mode():
            with torch.autocast(self.device.type, dtype=self.model.dtype, enabled=self._autocast):
                hidden = self.model.encoder(ids_dev, seq_lens, **encoder_kw)  # [T, H]
            for j, r in enumerate(batch):
                if r.is_partial_prefill:  # keep what the pooler will need of these rows
                    self.prefills.keep(r, hidden[starts[j] : starts[j] + seq_lens[j]])
            if events is not None:
                events[1].record()
            t1 = time.perf_counter()
            outputs = pooler(hidden, metadata)
            if events is not None:
                events[2].record()
        t2 = time.perf_counter()
        results: list[dict[PoolingTask, PoolerOutput] | None] = [
            None if r.is_partial_prefill else {} for r in batch
        ]
        for (j, task), out in zip(owners, outputs, strict=True):
            results[j][task] = _to_host(out, self._pin)  # type: ignore[index]
        if self._pin:  # kernels are asynchronous: host times would be launch times
            event = torch.cuda.Event()
            event.record()
            return BatchOutputs(results, event, timing_events=events)  # type: ignore[arg-type]
        return BatchOutputs(results, None, t1 - t0, t2 - t1)
