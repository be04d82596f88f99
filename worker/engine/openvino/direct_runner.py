"""A cached dense graph run without torch: token ids in, ``embed`` vectors out.

What :class:`OpenVinoEncoder` (``encoder.py``) and the torch poolers do for a dense model, for
the encode that imports no torch (``direct_plan.py``, ``runtime/direct_encode.py``): the texts
are grouped into the same static length buckets (``buckets.py``, at most ``budget`` padded
tokens a call), the calls spread over the compiled model's streams (``threads.py``: OpenVINO's
throughput setting for the CPU budget), and each call's ``[rows, L, H]`` hidden states pooled as
it finishes, on OpenVINO's callback thread (``direct_pool.py``), so no packed ``[T, H]`` copy
is made.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from poolq.worker.engine.openvino.buckets import (
    Call,
    bucket_lengths,
    padded_inputs,
    plan_calls,
    spread,
)
from poolq.worker.engine.openvino.direct_plan import DirectPlan
from poolq.worker.engine.openvino.direct_pool import normalized, pool_rows

# most padded tokens a call: the engine's CPU batch. Offline, over a whole block, calls of 2048
# run faster than backend.py's 8192 (the operands stay in cache)
CALL_TOKENS = 2048


class DirectRunner:
    """The compiled graph of ``plan``'s model with its requests in flight."""

    def __init__(self, plan: DirectPlan, compiled: Any, budget: int, threads: int) -> None:
        import openvino as ov

        self.plan = plan
        self.lengths = bucket_lengths(plan.max_length)
        self.budget = budget
        self.threads = threads
        self.streams = max(1, int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
        self._queue = ov.AsyncInferQueue(compiled, self.streams)
        self.ready_s = 0.0

    @classmethod
    def compile(
        cls, plan: DirectPlan, key: str, threads: int, max_batch_tokens: int | None = None
    ) -> DirectRunner:
        """The cached graph ``key`` compiled for ``threads`` (the prefetched one when it is
        that: ``prefetch.py``). ``max_batch_tokens``: the call cap (default ``CALL_TOKENS``)."""
        import openvino as ov

        from poolq.worker.engine.openvino import cache
        from poolq.worker.engine.openvino.threads import compile_config

        t0 = time.perf_counter()
        compiled = cache.compile_cached(ov.Core(), key, compile_config(threads))
        budget = min(max_batch_tokens, CALL_TOKENS) if max_batch_tokens else CALL_TOKENS
        runner = cls(plan, compiled, budget, threads)
        runner.ready_s = time.perf_counter() - t0
        return runner

    def describe(self) -> str:
        return (
            f"cached, no torch: dense {self.plan.pooling}, {self.threads} threads, "
            f"{self.streams} streams, {len(self.lengths)} length buckets, "
            f"ready in {self.ready_s:.2f} s"
        )

    def run(self, texts: Sequence[list[int]], normalize: bool) -> np.ndarray:
        """``texts``' token ids (each 1..max_length ids) -> ``[len(texts), H]`` fp32 vectors,
        in order; L2-normalised where ``normalize``."""
        n = len(texts)
        out = np.empty((n, self.plan.hidden_size), dtype=np.float32)
        if n == 0:
            return out
        seq_lens = [len(t) for t in texts]
        if min(seq_lens) < 1:
            raise ValueError("a text has no tokens")
        ids = np.fromiter((i for t in texts for i in t), dtype=np.int64, count=sum(seq_lens))
        starts = np.concatenate(([0], np.cumsum(seq_lens)[:-1])).astype(np.int64).tolist()
        calls = spread(plan_calls(seq_lens, self.lengths, self.budget), self.streams)
        errors: list[BaseException] = []
        method = self.plan.pooling

        def done(request: Any, call: Call) -> None:
            try:
                hidden = request.get_tensor("hidden").data  # [rows, L, H]
                lens = [seq_lens[s] for s in call.seqs]
                out[list(call.seqs)] = pool_rows(hidden, lens, method)
            except BaseException as exc:  # raised on the caller's thread below
                errors.append(exc)

        self._queue.set_callback(done)
        for call in calls:
            pad_ids, mask, _ = padded_inputs(ids, starts, seq_lens, call)
            self._queue.start_async({"input_ids": pad_ids, "attention_mask": mask}, call)
        self._queue.wait_all()
        if errors:
            raise errors[0]
        return normalized(out) if normalize else out
