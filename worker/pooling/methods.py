"""Pooling methods: which rows of the flat hidden states make a request's output.

Sequence methods (CLS, LAST, MEAN) return one row per request, ``[n, hidden]``. Token methods
(ALL, STEP) return each request's rows, a list of ``[n_i, hidden]`` (``None`` while a chunked
prompt is unfinished). The metadata must tile the hidden states (see ``metadata.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal

import torch

from poolq.worker.pooling.metadata import PoolingMetadata

# Bound on the FP32 temporary of MEAN pooling (vLLM uses the same 16 MiB). Patched in tests.
MEAN_CHUNK_BYTES = 16 << 20

PoolingType = Literal["CLS", "LAST", "MEAN", "ALL", "STEP"]


def _refuse_partial_prefill(name: str, metadata: PoolingMetadata) -> None:
    if metadata.cursor.partial_prefill:
        raise ValueError(
            f"{name} pooling needs whole prompts in one step, got a partial prefill "
            f"(scheduled {metadata.cursor.num_scheduled_tokens_cpu.tolist()} of prompt lengths "
            f"{metadata.cursor.prompt_lens_cpu.tolist()}); disable chunked prefill for this model"
        )


class SequencePoolingMethod(ABC):
    name: str
    supports_partial_prefill = False

    @abstractmethod
    def __call__(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> torch.Tensor:
        """``[T, H]`` -> ``[n, H]``."""


class CLSPool(SequencePoolingMethod):
    name = "CLS"

    def __call__(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> torch.Tensor:
        _refuse_partial_prefill(self.name, metadata)
        return hidden.index_select(0, metadata.cursor.first_token_indices_dev)


class LastPool(SequencePoolingMethod):
    """Last row of each request; valid under chunked prefill once the request's last chunk ran."""

    name = "LAST"
    supports_partial_prefill = True

    def __call__(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> torch.Tensor:
        return hidden.index_select(0, metadata.cursor.last_token_indices_dev)


class MeanPool(SequencePoolingMethod):
    """Mean over each request's rows, accumulated in FP32 in chunks of at most
    ``MEAN_CHUNK_BYTES`` so the FP32 temporary stays small for bf16/fp16 hidden states."""

    name = "MEAN"

    def __call__(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> torch.Tensor:
        _refuse_partial_prefill(self.name, metadata)
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
        lens_dev = cursor._to_dev(cursor.prompt_lens_cpu).to(torch.float32)
        return acc / lens_dev.unsqueeze(1)


class TokenPoolingMethod(ABC):
    name: str
    requires_token_ids = False

    @abstractmethod
    def __call__(
        self, hidden: torch.Tensor, metadata: PoolingMetadata
    ) -> list[torch.Tensor | None]:
        """``[T, H]`` -> per request ``[n_i, H]`` (``None`` while unfinished)."""


class AllPool(TokenPoolingMethod):
    """Every row of each request. Under chunked prefill the chunks are cached in the request's
    :class:`PoolingStates` until its prompt is complete."""

    name = "ALL"

    def __call__(
        self, hidden: torch.Tensor, metadata: PoolingMetadata
    ) -> list[torch.Tensor | None]:
        cursor = metadata.cursor
        chunks = list(
            torch.split(hidden[: cursor.num_tokens], cursor.num_scheduled_tokens_cpu.tolist())
        )
        if not cursor.partial_prefill:
            return list(chunks)
        if metadata.pooling_states is None:
            raise ValueError(
                "ALL pooling under chunked prefill needs pooling_states in the metadata"
            )
        out: list[torch.Tensor | None] = []
        finished = cursor.finished_mask.tolist()
        for chunk, state, done in zip(chunks, metadata.pooling_states, finished, strict=True):
            state.hidden_states_cache.append(chunk)
            if done:
                out.append(torch.cat(state.hidden_states_cache))
                state.clean()
            else:
                out.append(None)
        return out


class StepPool(TokenPoolingMethod):
    """ALL, then only the rows whose token id is ``step_tag_id`` (process reward models)."""

    name = "STEP"
    requires_token_ids = True

    def __init__(self, step_tag_id: int) -> None:
        self.step_tag_id = step_tag_id
        self._all = AllPool()

    def __call__(
        self, hidden: torch.Tensor, metadata: PoolingMetadata
    ) -> list[torch.Tensor | None]:
        rows = self._all(hidden, metadata)
        assert metadata.prompt_token_ids_cpu is not None, "STEP pooling requires token ids"
        out: list[torch.Tensor | None] = []
        for r, ids_cpu, seq_len in zip(
            rows, metadata.prompt_token_ids_cpu, metadata.cursor.seq_lens_cpu.tolist(), strict=True
        ):
            if r is None:
                out.append(None)
                continue
            keep_cpu = torch.nonzero(ids_cpu[:seq_len] == self.step_tag_id).squeeze(1)
            out.append(r.index_select(0, keep_cpu.to(r.device, non_blocking=True)))
        return out


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
