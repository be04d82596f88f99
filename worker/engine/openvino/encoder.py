"""The compiled OpenVINO model behind the packed encoder's call: ``(input_ids [T], seq_lens,
key_mask_cpu=None) -> hidden [T, H]``, so the runner, the scheduler and the poolers do not know
which backend ran.

Each batch is cut into static length buckets (``buckets.py``); every call's real rows are copied
back to their packed places. With a SPLADE head in the graph, each call also returns the pooled
``[rows, V]`` weights; they are kept, by sequence start, for :class:`GraphSpladePooler`
(``splade.py``), which the runner calls right after this forward on the same thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from poolq.worker.engine.openvino.buckets import Call, padded_inputs, plan_calls, spread


class OpenVinoEncoder(nn.Module):
    """A compiled model (``openvino.CompiledModel``) with the packed encoder's signature."""

    causal = False  # bidirectional families only: no chunked prefill

    def __init__(
        self,
        compiled: Any | None,
        hidden_size: int,
        lengths: tuple[int, ...],
        budget: int,
        *,
        sparse_head: bool = False,
        remove_token_ids: Sequence[int] = (),
    ) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.lengths = lengths
        self.budget = budget
        self.sparse_head = sparse_head  # the graph takes pool_mask and returns "sparse"
        self._remove = np.asarray(sorted(remove_token_ids), dtype=np.int64)
        self.compiled: Any = None
        self.precision = "float32"
        self._request: Any = None
        self._queue: Any = None
        self.streams = 1
        if compiled is not None:  # else set by use() before the first forward
            self.use(compiled, "float32")
        # the last forward's pooled SPLADE weights: row per sequence start, and its hidden
        self.last_hidden: Tensor | None = None
        self.last_sparse: dict[int, np.ndarray] = {}
        self.calls = 0  # model calls so far (tests, benchmarks)

    @property
    def offline_batch_tokens(self) -> int:
        """``poolq encode``'s default batch on this backend: one call's cap (8192 padded tokens
        without a SPLADE head). A worker keeps the engine's 2048: a query's forward would wait
        behind a larger one; offline nothing waits."""
        return self.budget

    def use(self, compiled: Any, precision: str) -> None:
        """Run ``compiled`` from now on (the int8 gate switches fp32 -> int8), with as many
        requests in flight as it has streams (``threads.py``: OpenVINO's choice)."""
        import openvino as ov

        self.compiled = compiled
        self.precision = precision
        self.streams = max(1, int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
        self._request = compiled.create_infer_request()
        self._queue = ov.AsyncInferQueue(compiled, self.streams) if self.streams > 1 else None

    def forward(
        self,
        input_ids: Tensor,
        seq_lens: list[int],
        token_type_ids: Tensor | None = None,
        key_mask_cpu: Tensor | None = None,
    ) -> Tensor:
        if token_type_ids is not None:
            raise ValueError("the OpenVINO backend takes no token_type_ids")
        ids = input_ids.cpu().numpy()
        t = int(ids.shape[0])
        if t != sum(seq_lens):
            raise ValueError(f"input_ids must be flat [sum(seq_lens)={sum(seq_lens)}], got {t}")
        key_mask = key_mask_cpu.numpy() if key_mask_cpu is not None else None
        starts = np.concatenate(([0], np.cumsum(seq_lens)[:-1])).astype(np.int64).tolist()
        out = np.empty((t, self.hidden_size), dtype=np.float32)
        self.last_sparse = {}
        calls = plan_calls(seq_lens, self.lengths, self.budget)
        if self._queue is None:
            for call in calls:
                res = self._request.infer(self._inputs(call, ids, starts, seq_lens, key_mask))
                sparse = res["sparse"] if self.sparse_head else None
                self._take(call, res["hidden"], sparse, starts, seq_lens, out)
        else:
            self._run_streams(spread(calls, self.streams), ids, starts, seq_lens, key_mask, out)
        self.calls += len(calls)
        hidden = torch.from_numpy(out)
        self.last_hidden = hidden
        return hidden

    def _inputs(
        self,
        call: Call,
        ids: np.ndarray,
        starts: list[int],
        seq_lens: list[int],
        key_mask: np.ndarray | None,
    ) -> dict[str, np.ndarray]:
        pad_ids, mask, valid = padded_inputs(ids, starts, seq_lens, call, key_mask)
        inputs = {"input_ids": pad_ids, "attention_mask": mask}
        if self.sparse_head:
            pool = valid & ~np.isin(pad_ids, self._remove) if self._remove.size else valid
            inputs["pool_mask"] = pool.astype(np.int64)
        return inputs

    def _take(
        self,
        call: Call,
        hidden: np.ndarray,
        sparse: np.ndarray | None,
        starts: list[int],
        seq_lens: list[int],
        out: np.ndarray,
    ) -> None:
        """A call's real rows to their packed places; its pooled SPLADE rows, copied (the
        request's next call reuses its output)."""
        for r, s in enumerate(call.seqs):  # hidden: [rows, L, H]
            a, n = starts[s], seq_lens[s]
            out[a : a + n] = hidden[r, :n]
            if sparse is not None:
                self.last_sparse[a] = np.array(sparse[r])

    def _run_streams(
        self,
        calls: list[Call],
        ids: np.ndarray,
        starts: list[int],
        seq_lens: list[int],
        key_mask: np.ndarray | None,
        out: np.ndarray,
    ) -> None:
        """The calls on the compiled model's streams, each taken by the next idle request; the
        results are copied out as each finishes (OpenVINO's callback thread)."""
        errors: list[BaseException] = []

        def done(request: Any, call: Call) -> None:
            try:
                sparse = request.get_tensor("sparse").data if self.sparse_head else None
                self._take(call, request.get_tensor("hidden").data, sparse, starts, seq_lens, out)
            except BaseException as exc:  # raised on the caller's thread below
                errors.append(exc)

        queue = self._queue
        queue.set_callback(done)
        for call in calls:
            queue.start_async(self._inputs(call, ids, starts, seq_lens, key_mask), call)
        queue.wait_all()
        if errors:
            raise errors[0]
