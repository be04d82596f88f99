"""Where each request sits in a flat batch of hidden states, and what it asked for.

The hidden states of a step are flat, ``[total_tokens, hidden]``: no batch dimension and no
padding. :class:`PoolingCursor` is the ledger of each request's rows (a chunked prefill's:
its final chunk, ``prefix.py``). All counts live on the host (``_cpu``); the device copies of
the row indices are made lazily, with a non-blocking host-to-device copy, so building or slicing
a cursor never waits for the device.

Invariant kept by :class:`~worker.pooling.dispatch.DispatchPooler` for every pooler it calls: the
requests of a metadata *tile* the hidden states they are given, in order (request ``i`` owns rows
``first[i] .. last[i]`` and ``first[i + 1] == last[i] + 1``, ``first[0] == 0``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property

import torch

from poolq.worker.pooling.params import PoolingParams
from poolq.worker.pooling.prefix import PrefillPrefix


def _as_index_cpu(values: Sequence[int] | torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(values, dtype=torch.int64, device="cpu").reshape(-1)


def _exclusive_cumsum(counts_cpu: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(counts_cpu, 0) - counts_cpu


@dataclass(frozen=True, eq=False)
class PoolingCursor:
    """Row ledger of one step. Both tensors are int64 ``[num_requests]`` on the host.

    ``token_starts_cpu``: first row of each request in this step's hidden states (the prefix sum
    of the counts unless the caller lays rows out otherwise).
    ``num_scheduled_tokens_cpu``: rows of the request, its whole prompt.
    """

    token_starts_cpu: torch.Tensor
    num_scheduled_tokens_cpu: torch.Tensor
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @classmethod
    def build(
        cls,
        num_scheduled_tokens: Sequence[int] | torch.Tensor,
        token_starts: Sequence[int] | torch.Tensor | None = None,
        device: torch.device | str = "cpu",
    ) -> PoolingCursor:
        """From host-side counts. By default requests follow each other
        (``first = cumsum[:n]``, ``last = cumsum[1:] - 1``)."""
        sched_cpu = _as_index_cpu(num_scheduled_tokens)
        starts_cpu = (
            _exclusive_cumsum(sched_cpu) if token_starts is None else _as_index_cpu(token_starts)
        )
        n = sched_cpu.numel()
        if starts_cpu.numel() != n:
            raise ValueError(
                f"token_starts: expected {n} entries (one per request), got {starts_cpu.numel()}"
            )
        if n and bool((sched_cpu < 1).any()):
            raise ValueError(
                f"num_scheduled_tokens: expected >= 1 per request, got {sched_cpu.tolist()}"
            )
        return cls(starts_cpu, sched_cpu, torch.device(device))

    def __len__(self) -> int:
        return int(self.num_scheduled_tokens_cpu.numel())

    @cached_property
    def last_token_indices_cpu(self) -> torch.Tensor:
        return self.token_starts_cpu + self.num_scheduled_tokens_cpu - 1

    @cached_property
    def num_tokens(self) -> int:
        """Rows this cursor covers (the sum of the counts)."""
        return int(self.num_scheduled_tokens_cpu.sum())

    @cached_property
    def is_tiled(self) -> bool:
        """Requests own consecutive rows from row 0 (the invariant poolers rely on)."""
        return bool(
            torch.equal(self.token_starts_cpu, _exclusive_cumsum(self.num_scheduled_tokens_cpu))
        )

    # Device views (lazy, non-blocking host-to-device copies; never a device-to-host sync) -----
    @cached_property
    def first_token_indices_dev(self) -> torch.Tensor:
        return self._to_dev(self.token_starts_cpu)

    @cached_property
    def last_token_indices_dev(self) -> torch.Tensor:
        return self._to_dev(self.last_token_indices_cpu)

    @cached_property
    def segment_ids_dev(self) -> torch.Tensor:
        """int64 ``[num_tokens]``: the request index of every row (tiled layout)."""
        seg_cpu = torch.repeat_interleave(torch.arange(len(self)), self.num_scheduled_tokens_cpu)
        return self._to_dev(seg_cpu)

    def _to_dev(self, t_cpu: torch.Tensor) -> torch.Tensor:
        if self.device.type == "cpu":
            return t_cpu
        return t_cpu.pin_memory().to(self.device, non_blocking=True)

    # Derivations (new objects; the original is never mutated) --------------------------------
    def select(self, index: slice | Sequence[int] | torch.Tensor) -> PoolingCursor:
        """The cursor of a subset of requests. Row indices stay absolute."""
        idx = index if isinstance(index, slice) else _as_index_cpu(index)
        return PoolingCursor(
            self.token_starts_cpu[idx], self.num_scheduled_tokens_cpu[idx], self.device
        )

    def shifted(self, offset: int | torch.Tensor) -> PoolingCursor:
        """Row indices moved by ``-offset`` (an int, or one host int64 per request)."""
        return replace(self, token_starts_cpu=self.token_starts_cpu - offset)


@dataclass(frozen=True, eq=False)
class PoolingMetadata:
    """Everything a pooler needs about the requests of one step.

    ``prompt_token_ids_cpu``: each request's prompt (host int64 ``[n_i]``), present when a pooler
    declared ``requires_token_ids``. ``request_ids`` name requests in error messages.
    ``keep_rows_cpu``: per request, ``None`` or a host bool ``[n_i]`` of the rows a token-level
    output keeps (a ColBERT document drops its punctuation rows); ``None`` for the whole batch
    when no request drops rows.
    """

    pooling_params: tuple[PoolingParams, ...]
    cursor: PoolingCursor
    prompt_token_ids_cpu: tuple[torch.Tensor, ...] | None = None
    request_ids: tuple[str, ...] | None = None
    keep_rows_cpu: tuple[torch.Tensor | None, ...] | None = None
    # chunked prefill: per request, None or what its earlier chunks left (``prefix.py``); the
    # request's rows here are its final chunk. None for the whole batch when no request has one.
    prefixes: tuple[PrefillPrefix | None, ...] | None = None

    def __post_init__(self) -> None:
        n = len(self.cursor)
        for name in (f.name for f in fields(self) if f.name != "cursor"):  # one per request
            value = getattr(self, name)
            if value is not None and len(value) != n:
                raise ValueError(
                    f"{name}: expected {n} entries (one per request), got {len(value)}"
                )
        if self.prompt_token_ids_cpu is not None:
            counts = self.cursor.num_scheduled_tokens_cpu.tolist()
            if self.prefixes is not None:  # a chunked request's ids are its whole prompt
                counts = [
                    c + (p.num_tokens if p else 0)
                    for c, p in zip(counts, self.prefixes, strict=True)
                ]
            got = [int(t.numel()) for t in self.prompt_token_ids_cpu]
            if got != counts:
                raise ValueError(
                    f"prompt_token_ids_cpu: expected one id per row ({counts}), got {got}"
                )

    @classmethod
    def build(
        cls,
        pooling_params: Sequence[PoolingParams],
        num_scheduled_tokens: Sequence[int] | torch.Tensor,
        *,
        prompt_token_ids: Sequence[Sequence[int] | torch.Tensor] | None = None,
        request_ids: Sequence[str] | None = None,
        device: torch.device | str = "cpu",
    ) -> PoolingMetadata:
        cursor = PoolingCursor.build(num_scheduled_tokens, device=device)
        ids = (
            None if prompt_token_ids is None else tuple(_as_index_cpu(t) for t in prompt_token_ids)
        )
        return cls(
            tuple(pooling_params),
            cursor,
            ids,
            None if request_ids is None else tuple(request_ids),
        )

    def __len__(self) -> int:
        return len(self.cursor)

    def select(self, indices: Sequence[int]) -> PoolingMetadata:
        """The metadata of a subset of requests, in the given order."""
        idx = list(indices)

        def pick(seq: tuple | None) -> tuple | None:
            return None if seq is None else tuple(seq[i] for i in idx)

        return PoolingMetadata(
            tuple(self.pooling_params[i] for i in idx),
            self.cursor.select(idx),
            pick(self.prompt_token_ids_cpu),
            pick(self.request_ids),
            pick(self.keep_rows_cpu),
            pick(self.prefixes),
        )

    def prefix_items(self) -> list[tuple[int, PrefillPrefix]]:
        """``(request index, prefix)`` of the requests continuing a chunked prefill."""
        if self.prefixes is None:
            return []
        return [(i, p) for i, p in enumerate(self.prefixes) if p is not None]

    def token_ids_cpu(self) -> tuple[torch.Tensor, ...]:
        """Per request, the token ids of its rows (host int64 ``[n_i]``)."""
        if self.prompt_token_ids_cpu is None:
            raise ValueError("this pooler needs token ids, but the batch was built without them")
        return self.prompt_token_ids_cpu
