"""The async engine's small types: its errors, counters and observer protocol, and the task
specs a caller may pass (``engine.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from poolq.worker.pooling import PoolingParams


class InputTooLongError(ValueError):
    pass


@dataclass
class EngineStats:
    batches: int = 0
    texts: int = 0
    tokens: int = 0
    forward_s: float = 0.0
    multi_group_batches: int = 0  # batches holding requests of several groups (jobs)
    batch_sizes: list[int] | None = None  # texts per batch, for tests and benchmarks

    def snapshot(self) -> dict[str, float | int]:
        """The counters as ``AsyncEngine.stats_snapshot`` reports them (before the queue's)."""
        return {
            "batches": self.batches,
            "texts": self.texts,
            "tokens": self.tokens,
            "forward_s": round(self.forward_s, 3),
            "multi_group_batches": self.multi_group_batches,
            "mean_batch_tokens": round(self.tokens / self.batches, 1) if self.batches else 0.0,
        }


class EngineObserver(Protocol):
    """Timings reported where the work happens (the metrics endpoint adapts them); called from
    the tokenizer pool and the model thread, so implementations must be thread-safe and quick."""

    def tokenized(self, seconds: float) -> None:
        """One encode call's texts tokenized (in the tokenizer pool)."""

    def batch(
        self, tokens: int, queue_waits: Sequence[float], forward_s: float, pool_s: float
    ) -> None:
        """One batch finished: its tokens, each text's wait from admission to the scheduler
        until the batch was cut, the encoder forward and the pooler in seconds."""


TaskSpec = str | PoolingParams


def as_params(tasks: Sequence[TaskSpec]) -> tuple[PoolingParams, ...]:
    params = tuple(t if isinstance(t, PoolingParams) else PoolingParams(task=t) for t in tasks)  # type: ignore[arg-type]
    seen = [p.task for p in params]
    if len(set(seen)) != len(seen):
        raise ValueError(f"each task may be asked once per text, got {seen}")
    if not params:
        raise ValueError("at least one task is required")
    return params
