"""SPLADE: lexical weights from a masked-language-model head.

``w[v] = reduce_t log1p(relu(logits[t, v]))`` over a request's tokens ``t``. For ``max`` we use
the exact identity ``max_t log1p(relu(x_t)) == log1p(relu(max_t x_t))`` (both functions are
monotone and applied elementwise), so the activation runs on ``[n, V]`` instead of ``[T, V]``.
Logits are computed for at most ``chunk_bytes`` worth of tokens at a time: no padded ``[B, L, V]``
tensor and a bounded ``[t, V]`` temporary. Sparsification (``nonzero``, ``top_k``) runs on the
device; only the non-zeros cross to the host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import torch
from torch import nn

from poolq.worker.pooling.metadata import PoolingMetadata
from poolq.worker.pooling.outputs import PoolerOutput, SparseEmbedding
from poolq.worker.pooling.poolers import Pooler
from poolq.worker.pooling.tasks import PoolingTask

# Logits are computed at most this many bytes at a time. On the CPU the [t, V] block is written
# by the vocabulary GEMM and read back at once by the max, so it must stay in cache: 8 MiB (about
# 64 rows of a 30522 vocabulary) rather than 32; fewer than ~32 rows starve the GEMM
# (benchmarks/bench_encode_vs_st.py measures the pooling).
SPLADE_CHUNK_BYTES = 32 << 20  # CUDA and other devices
SPLADE_CPU_CHUNK_BYTES = 8 << 20
SPLADE_MIN_CHUNK_ROWS = 32


def chunk_rows(device: torch.device, vocab: int) -> int:
    """Token rows per logits block on ``device`` for a ``vocab``-wide head."""
    budget = SPLADE_CPU_CHUNK_BYTES if device.type == "cpu" else SPLADE_CHUNK_BYTES
    return max(SPLADE_MIN_CHUNK_ROWS, budget // (vocab * 4))


def _nothing() -> None:
    pass


def sparsify(
    weights: torch.Tensor,
    top_k: Sequence[int | None],
    min_weight: Sequence[float | None] | None = None,
) -> list[SparseEmbedding]:
    """``[n, V]`` non-negative weights -> per row ``(indices int32, values float32)``, sorted by
    index, zeros dropped, optionally only the ``top_k[i]`` largest of row ``i`` and only weights
    ``>= min_weight[i]``."""
    keep = weights > 0  # [n, V]
    for m in sorted({m for m in min_weight or () if m}):
        rows_dev = torch.tensor([i for i, mm in enumerate(min_weight or ()) if mm == m]).to(
            weights.device, non_blocking=True
        )
        keep[rows_dev] = keep.index_select(0, rows_dev) & (weights.index_select(0, rows_dev) >= m)
    for k in sorted({k for k in top_k if k is not None}):
        rows_cpu = torch.tensor([i for i, kk in enumerate(top_k) if kk == k])
        rows_dev = rows_cpu.to(weights.device, non_blocking=True)
        sub = weights.index_select(0, rows_dev)
        top_idx = sub.topk(min(k, sub.shape[1]), dim=1).indices
        top_mask = torch.zeros_like(sub, dtype=torch.bool).scatter_(1, top_idx, True)
        keep[rows_dev] = keep.index_select(0, rows_dev) & top_mask
    nz = keep.nonzero()  # [nnz, 2], row-major so each row's columns are ascending
    values = weights[keep]  # [nnz], same order as nz
    counts = keep.sum(1).tolist()  # one device->host sync for the whole batch
    indices = nz[:, 1].to(torch.int32)
    return [
        SparseEmbedding(i, v)
        for i, v in zip(
            torch.split(indices, counts), torch.split(values.float(), counts), strict=True
        )
    ]


class SpladePooler(Pooler):
    """MLM head -> (relu, log1p) -> max or sum over a request's tokens -> sparse vector.

    ``remove_token_ids``: rows whose token is one of these (e.g. CLS/SEP) are left out, as vLLM
    does. The default keeps them, like the original SPLADE and sentence-transformers'
    ``SparseEncoder``.
    """

    def __init__(
        self,
        mlm_head: nn.Module,
        vocab_size: int,
        *,
        mode: Literal["max", "sum"] = "max",
        remove_token_ids: Sequence[int] = (),
        top_k: int | None = None,
    ) -> None:
        super().__init__()
        if mode not in ("max", "sum"):
            raise ValueError(f"SPLADE mode must be 'max' or 'sum', got {mode!r}")
        self.mlm_head = mlm_head
        self.vocab_size = vocab_size
        self.mode = mode
        self.remove_token_ids = tuple(sorted(int(t) for t in remove_token_ids))
        self.top_k = top_k
        # bf16/fp16 runs the (large) vocabulary projection in that dtype; reductions stay FP32.
        self.compute_dtype: torch.dtype | None = None
        # called before each logits block; the loader sets the engine's safe point for CPU
        # models (a queued query-lane forward may run there: engine/execution/compute_thread.py)
        self.between_blocks: Callable[[], None] = _nothing

    def get_supported_tasks(self) -> frozenset[PoolingTask]:
        return frozenset({"sparse"})

    @property
    def requires_token_ids(self) -> bool:
        return bool(self.remove_token_ids)

    def output_dim(self, task: PoolingTask) -> int | None:
        return self.vocab_size

    def _logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """``[t, H]`` -> FP32 ``[t, V]``; the vocabulary projection runs in ``compute_dtype``."""
        if self.compute_dtype in (torch.bfloat16, torch.float16):
            with torch.autocast(hidden.device.type, dtype=self.compute_dtype):
                return self.mlm_head(hidden).float()
        return self.mlm_head(hidden.float()).float()

    def forward(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> list[PoolerOutput]:
        cursor = metadata.cursor
        n, vocab = len(cursor), self.vocab_size
        if n == 0:
            return []
        fill = float("-inf") if self.mode == "max" else 0.0
        acc = torch.full((n, vocab), fill, dtype=torch.float32, device=hidden.device)  # [n, V]
        keep_dev = None
        if self.remove_token_ids:
            ids_cpu = torch.cat(metadata.token_ids_cpu())  # [T]
            remove_cpu = torch.tensor(self.remove_token_ids, dtype=ids_cpu.dtype)
            keep_dev = (~torch.isin(ids_cpu, remove_cpu)).to(hidden.device, non_blocking=True)
        starts = cursor.token_starts_cpu.tolist()
        ends = (cursor.last_token_indices_cpu + 1).tolist()
        rows_per_chunk = chunk_rows(hidden.device, vocab)
        req = 0
        for lo in range(0, cursor.num_tokens, rows_per_chunk):
            hi = min(lo + rows_per_chunk, cursor.num_tokens)
            self.between_blocks()
            logits = self._logits(hidden[lo:hi])  # [t, V]
            if keep_dev is not None:
                logits = torch.where(keep_dev[lo:hi].unsqueeze(1), logits, fill)
            if self.mode == "sum":
                logits = torch.log1p(torch.relu(logits))
            while req < n and starts[req] < hi:  # requests overlapping [lo, hi)
                a, b = max(starts[req], lo) - lo, min(ends[req], hi) - lo
                part = logits[a:b]
                if self.mode == "max":
                    acc[req] = torch.maximum(acc[req], part.amax(0))
                else:
                    acc[req] += part.sum(0)
                if ends[req] > hi:
                    break  # continues in the next chunk
                req += 1
        weights = torch.log1p(torch.relu(acc)) if self.mode == "max" else acc  # [n, V]
        top_k = [p.top_k if p.top_k is not None else self.top_k for p in metadata.pooling_params]
        min_weight = [p.min_weight for p in metadata.pooling_params]
        return list(sparsify(weights, top_k, min_weight))
