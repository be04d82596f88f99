"""What callers hand the engine and what they get back."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from poolq.worker.engine.batching.lanes import Lane, OrderKey, order_key
from poolq.worker.pooling import PoolingParams, PoolingTask, SparseEmbedding
from poolq.worker.pooling.outputs import PoolerOutput

_arrival = itertools.count()
_calls = itertools.count()


def anonymous_group() -> str:
    """The group of a call (or of a request built alone) that names none: one call, one share."""
    return f"#call{next(_calls)}"


@dataclass(frozen=True)
class EncodeResult:
    """Per text: one output per requested task (dense ``float32[d]``, ``SparseEmbedding``,
    multi-vector ``float32[n_tokens, d]``, class scores), all on the host."""

    request_id: str
    outputs: dict[PoolingTask, PoolerOutput]
    num_tokens: int
    truncated: bool
    batch_index: int = -1  # which engine batch computed it (0-based)

    def __getitem__(self, task: PoolingTask) -> PoolerOutput:
        return self.outputs[task]

    def tensor(self, task: PoolingTask) -> torch.Tensor:
        """A dense output (``embed``, ``token_embed``, ``classify``), typed."""
        out = self.outputs[task]
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"output of task {task!r} is {type(out).__name__}, not a tensor")
        return out

    def sparse(self, task: PoolingTask = "sparse") -> SparseEmbedding:
        out = self.outputs[task]
        if not isinstance(out, SparseEmbedding):
            raise TypeError(
                f"output of task {task!r} is {type(out).__name__}, not a SparseEmbedding"
            )
        return out


class ResultSink(Protocol):
    """Where a request's result goes (an asyncio future, or its place in a :class:`CallResults`).
    Set on the event loop only; ``done()`` may be read from the model thread (a stale answer
    only delays dropping a cancelled request by one batch)."""

    def done(self) -> bool: ...

    def set_result(self, result: EncodeResult, /) -> None: ...

    def set_exception(self, exception: BaseException, /) -> None: ...


_UNSET: Any = object()


class Unanswered:
    """A :class:`ResultSink` for requests whose outputs are read from the runner directly (the
    int8 gate's calibration passes): never done, results dropped."""

    def done(self) -> bool:
        return False

    def set_result(self, result: EncodeResult, /) -> None:
        pass

    def set_exception(self, exception: BaseException, /) -> None:
        pass


class CallResults:
    """The results of one ``encode`` call, and one asyncio future for all of them: the caller is
    woken once, when its last request is done, not once per request (a future, a done callback
    and a loop wake-up per chunk cost the event loop more than the rest of a chunk's hand-off).
    A failure of any request fails the call."""

    __slots__ = ("future", "left", "results")

    def __init__(self, future: asyncio.Future[list[EncodeResult]], n: int) -> None:
        self.future = future
        self.results: list[EncodeResult] = [_UNSET] * n
        self.left = n

    def slot(self, index: int) -> RequestSlot:
        return RequestSlot(self, index)


class RequestSlot:
    """One request's place in its call's results (a :class:`ResultSink`)."""

    __slots__ = ("call", "index")

    def __init__(self, call: CallResults, index: int) -> None:
        self.call = call
        self.index = index

    def done(self) -> bool:
        call = self.call
        return call.future.done() or call.results[self.index] is not _UNSET

    def set_result(self, result: EncodeResult, /) -> None:
        call = self.call
        if call.results[self.index] is not _UNSET:
            return
        call.results[self.index] = result
        call.left -= 1
        if call.left == 0 and not call.future.done():
            call.future.set_result(call.results)

    def set_exception(self, exception: BaseException, /) -> None:
        if not self.call.future.done():
            self.call.future.set_exception(exception)


@dataclass(eq=False)
class EncodeRequest:
    """One text, tokenized, with every task it wants from one forward pass."""

    request_id: str
    token_ids: list[int]
    truncated: bool
    params: tuple[PoolingParams, ...]
    lane: Lane  # who runs next (lanes.py)
    future: ResultSink  # an asyncio future, or the request's place in its call
    # who asked: a job id, or for a call that names none its own (anonymous_group); the groups
    # of a lane share it by tokens (lanes.py)
    group: str = field(default_factory=anonymous_group)
    # Input form (ColBERT query/document), host bool [num_tokens] each; None: every token.
    key_mask_cpu: torch.Tensor | None = None  # tokens attended to as keys
    keep_rows_cpu: torch.Tensor | None = None  # rows kept in token-level outputs
    # a pair's segment of each token (score task), where the model reads them; None: all 0
    token_type_ids: list[int] | None = None
    arrival: int = field(default_factory=lambda: next(_arrival))
    queued_at: float = 0.0  # time.monotonic() when the scheduler admitted it (queue wait)
    start_tag: float = 0.0  # its fair-share start tag, set by the scheduler (lanes.py)

    # Chunked prefill (causal models): prompt tokens scheduled in earlier batches, and the span
    # [prefill_start, prefill_end) the scheduler's latest cut gave this request (the model
    # thread cuts, then runs the batch: the runner reads the span before the next cut).
    num_computed_tokens: int = 0
    prefill_start: int = 0
    prefill_end: int = -1  # -1: the whole prompt (no chunking)

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def scheduled_span(self) -> tuple[int, int]:
        return (self.prefill_start, self.num_tokens if self.prefill_end < 0 else self.prefill_end)

    @property
    def is_partial_prefill(self) -> bool:
        """This batch prefills part of the prompt, and not its end: no output yet."""
        return self.scheduled_span[1] < self.num_tokens

    @property
    def is_chunked(self) -> bool:
        """Prefilled across batches: the runner keeps its KV cache and pooling prefix."""
        return self.prefill_start > 0 or self.is_partial_prefill

    def order_key(self) -> OrderKey:
        """Its place in the queue (``lanes.order_key``)."""
        return order_key(self.lane, self.start_tag, self.arrival)
