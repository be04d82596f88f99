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

from poolq.worker.engine.openvino.buckets import Call, padded_inputs, plan_calls


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
        precision: str = "float32",
    ) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.lengths = lengths
        self.budget = budget
        self.sparse_head = sparse_head  # the graph takes pool_mask and returns "sparse"
        self._remove = np.asarray(sorted(remove_token_ids), dtype=np.int64)
        self.compiled: Any = None
        self.precision = precision
        self._request: Any = None
        if compiled is not None:  # else set by use() before the first forward
            self.use(compiled, precision)
        # the last forward's pooled SPLADE weights: row per sequence start, and its hidden
        self.last_hidden: Tensor | None = None
        self.last_sparse: dict[int, np.ndarray] = {}
        self.calls = 0  # model calls so far (tests, benchmarks)

    def use(self, compiled: Any, precision: str) -> None:
        """Run ``compiled`` from now on (the int8 gate switches fp32 -> int8)."""
        self.compiled = compiled
        self.precision = precision
        self._request = compiled.create_infer_request()

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
        for call in plan_calls(seq_lens, self.lengths, self.budget):
            self._run(call, ids, starts, seq_lens, key_mask, out)
        hidden = torch.from_numpy(out)
        self.last_hidden = hidden
        return hidden

    def _run(
        self,
        call: Call,
        ids: np.ndarray,
        starts: list[int],
        seq_lens: list[int],
        key_mask: np.ndarray | None,
        out: np.ndarray,
    ) -> None:
        pad_ids, mask, valid = padded_inputs(ids, starts, seq_lens, call, key_mask)
        inputs = {"input_ids": pad_ids, "attention_mask": mask}
        if self.sparse_head:
            pool = valid
            if self._remove.size:
                pool = valid & ~np.isin(pad_ids, self._remove)
            inputs["pool_mask"] = pool.astype(np.int64)
        res = self._request.infer(inputs)
        self.calls += 1
        hidden = res["hidden"]  # [rows, L, H]
        for r, s in enumerate(call.seqs):
            a, n = starts[s], seq_lens[s]
            out[a : a + n] = hidden[r, :n]
        if self.sparse_head:
            sparse = np.array(res["sparse"])  # [rows, V], a copy: the next call reuses it
            for r, s in enumerate(call.seqs):
                self.last_sparse[starts[s]] = sparse[r]
