"""Pooling methods: which rows of the flat hidden states make a request's output.

Sequence methods (CLS, LAST, MEAN) return one row per request, ``[n, hidden]``. The token method
(ALL) returns each request's rows, a list of ``[n_i, hidden]``. The metadata must tile the hidden
states (see ``metadata.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from poolq.worker.pooling.metadata import PoolingMetadata

# Bound on the FP32 temporary of MEAN pooling (vLLM uses the same 16 MiB). Patched in tests.
MEAN_CHUNK_BYTES = 16 << 20


class SequencePoolingMethod(ABC):
    name: str

    @abstractmethod
    def __call__(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> torch.Tensor:
        """``[T, H]`` -> ``[n, H]``."""


class CLSPool(SequencePoolingMethod):
    name = "CLS"

    def __call__(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> torch.Tensor:
        rows = hidden.index_select(0, metadata.cursor.first_token_indices_dev)  # [n, H]
        for i, prefix in metadata.prefix_items():  # chunked prefill: the first chunk's row
            rows[i] = prefix.need("first_row", self.name)
        return rows


class LastPool(SequencePoolingMethod):
    """Last row of each request."""

    name = "LAST"

    def __call__(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> torch.Tensor:
        return hidden.index_select(0, metadata.cursor.last_token_indices_dev)


class MeanPool(SequencePoolingMethod):
    """Mean over each request's rows, accumulated in FP32 in chunks of at most
    ``MEAN_CHUNK_BYTES`` so the FP32 temporary stays small for bf16/fp16 hidden states."""

    name = "MEAN"

    def __call__(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> torch.Tensor:
        cursor = metadata.cursor
        n, width = len(cursor), hidden.shape[1]
        acc = torch.zeros((n, width), dtype=torch.float32, device=hidden.device)  # [n, H]
        if n == 0:
            return acc
        segment_ids = cursor.segment_ids_dev  # [T]
        rows_per_chunk = max(1, MEAN_CHUNK_BYTES // (width * 4))
        for lo in range(0, cursor.num_tokens, rows_per_chunk):
            hi = min(lo + rows_per_chunk, cursor.num_tokens)
            acc.index_add_(0, segment_ids[lo:hi], hidden[lo:hi].float())
        lens_cpu = cursor.num_scheduled_tokens_cpu
        prefixes = metadata.prefix_items()
        if prefixes:  # chunked prefill: the earlier chunks' FP32 sums, divided by the full length
            lens_cpu = lens_cpu.clone()
            for i, prefix in prefixes:
                acc[i] += prefix.need("sum_fp32", self.name)
                lens_cpu[i] += prefix.num_tokens
        lens_dev = cursor._to_dev(lens_cpu).to(torch.float32)  # [n]
        return acc / lens_dev.unsqueeze(1)


class TokenPoolingMethod(ABC):
    name: str

    @abstractmethod
    def __call__(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> list[torch.Tensor]:
        """``[T, H]`` -> per request ``[n_i, H]``."""


class AllPool(TokenPoolingMethod):
    """Every row of each request (views of ``hidden``, no copy)."""

    name = "ALL"

    def __call__(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> list[torch.Tensor]:
        cursor = metadata.cursor
        rows = list(
            torch.split(hidden[: cursor.num_tokens], cursor.num_scheduled_tokens_cpu.tolist())
        )
        for i, prefix in metadata.prefix_items():  # chunked prefill: earlier chunks first
            rows[i] = torch.cat([prefix.need("rows", self.name), rows[i]])
        return rows


def sequence_method(pooling_type: str) -> SequencePoolingMethod:
    methods: dict[str, type[SequencePoolingMethod]] = {
        "CLS": CLSPool,
        "LAST": LastPool,
        "MEAN": MeanPool,
    }
    key = pooling_type.upper()
    if key not in methods:
        raise ValueError(
            f"unknown sequence pooling type {pooling_type!r}; expected one of {sorted(methods)}"
        )
    return methods[key]()
