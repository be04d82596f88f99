"""Chunked prefill bookkeeping for causal models (the runner's side).

A prompt longer than the batch budget is prefilled over several batches (the scheduler cuts the
spans). Between its chunks the runner keeps, per request, the sequence's :class:`KVCache` (every
layer's keys and values so far: later chunks attend to them) and what the pooler will need of
the earlier rows (``pooling/prefix.py``): the first row for CLS, an FP32 running sum for MEAN,
the rows themselves for ALL (multi-vectors), nothing for LAST. Everything is dropped when the
sequence finishes or its caller goes away.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from poolq.worker.engine.batching.requests import EncodeRequest
from poolq.worker.engine.models.causal_attention import KVCache
from poolq.worker.pooling import DispatchPooler
from poolq.worker.pooling.prefix import PrefillPrefix

_NEEDS = {"CLS": "first_row", "MEAN": "sum_fp32", "ALL": "rows", "LAST": None}


def prefix_needs(pooler: DispatchPooler, request: EncodeRequest) -> frozenset[str]:
    """What the request's poolers need of its earlier chunks' rows."""
    needs: set[str] = set()
    for p in request.params:
        method = getattr(pooler.poolers_by_task.get(p.task), "method", None)
        name = getattr(method, "name", None)
        if name not in _NEEDS:
            raise ValueError(
                f"request {request.request_id!r}: task {p.task!r} cannot pool a prompt prefilled "
                f"in chunks (pooling {name!r}); raise the batch token budget above "
                f"{request.num_tokens} tokens"
            )
        if _NEEDS[name] is not None:
            needs.add(str(_NEEDS[name]))
    return frozenset(needs)


@dataclass(eq=False)
class _State:
    needs: frozenset[str]
    cache: KVCache = field(default_factory=KVCache)
    num_tokens: int = 0
    first_row: torch.Tensor | None = None
    sum_fp32: torch.Tensor | None = None
    rows: list[torch.Tensor] = field(default_factory=list)


class ChunkedPrefills:
    """Per request in the middle of a chunked prefill: its cache and pooling prefix."""

    def __init__(self, pooler: DispatchPooler) -> None:
        self.pooler = pooler
        self._states: dict[EncodeRequest, _State] = {}

    def __len__(self) -> int:
        return len(self._states)

    def drop_abandoned(self) -> None:
        """Free the caches of requests cancelled (or failed) between their chunks."""
        for req in [r for r in self._states if r.future.done()]:
            del self._states[req]

    def cache(self, req: EncodeRequest) -> KVCache:
        state = self._states.get(req)
        if state is None:
            if req.prefill_start != 0:
                raise RuntimeError(
                    f"request {req.request_id!r}: chunk at token {req.prefill_start} has no cache"
                )
            state = self._states[req] = _State(prefix_needs(self.pooler, req))
        return state.cache

    def keep(self, req: EncodeRequest, rows: torch.Tensor) -> None:
        """After a non-final chunk's forward: keep what the pooler needs of its rows [n, H]."""
        state = self._states[req]
        if "first_row" in state.needs and state.num_tokens == 0:
            state.first_row = rows[0].clone()
        if "sum_fp32" in state.needs:
            chunk_sum = rows.float().sum(0)  # [H] fp32
            state.sum_fp32 = chunk_sum if state.sum_fp32 is None else state.sum_fp32 + chunk_sum
        if "rows" in state.needs:
            state.rows.append(rows.clone())
        state.num_tokens += int(rows.shape[0])

    def finish(self, req: EncodeRequest) -> PrefillPrefix:
        """The final chunk is being pooled: the prefix of its earlier chunks; the cache is freed."""
        state = self._states.pop(req)
        return PrefillPrefix(
            state.num_tokens,
            state.first_row,
            state.sum_fp32,
            torch.cat(state.rows) if state.rows else None,
        )
