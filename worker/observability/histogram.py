"""Histograms filled from the engine's threads: :class:`Histogram` (a lock-guarded bucket array
that takes its lock once per batch of values) and :class:`EngineMetrics`, the observer of one
engine (``AsyncEngine.set_observer``), with the bucket bounds of every poolq histogram."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Iterator, Sequence

# the stages of ``poolq_stage_seconds``: the engine's four, then the Qdrant writer's
ENGINE_STAGES = ("tokenize", "queue_wait", "forward", "pool")
STAGES = (*ENGINE_STAGES, "write")

SECONDS_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
TOKENS_BUCKETS = tuple(float(2**k) for k in range(4, 18))  # 16 .. 131072
FILL_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)


class Histogram:
    """A lock-guarded bucket array: ``observe_many`` takes the lock once for a batch of values
    (the model thread reports one queue wait per request of a batch). A value on a bound counts
    in that bound's bucket (Prometheus ``le``)."""

    def __init__(self, buckets: Sequence[float]) -> None:
        self.bounds = tuple(buckets)
        self._counts = [0] * (len(self.bounds) + 1)  # the last: +Inf only
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        self.observe_many((value,))

    def observe_many(self, values: Iterable[float]) -> None:
        values = list(values)
        idx = [bisect.bisect_left(self.bounds, v) for v in values]
        with self._lock:
            for i in idx:
                self._counts[i] += 1
            self._sum += sum(values)

    def snapshot(self) -> tuple[list[tuple[str, float]], float]:
        """Cumulative ``(le, count)`` pairs ending with ``+Inf``, and the sum."""
        with self._lock:
            counts, total = list(self._counts), self._sum
        out: list[tuple[str, float]] = []
        acc = 0
        for bound, c in zip((*self.bounds, float("inf")), counts, strict=True):
            acc += c
            out.append(("+Inf" if bound == float("inf") else repr(bound), acc))
        return out, total

    @property
    def count(self) -> int:
        with self._lock:
            return sum(self._counts)


class EngineMetrics:
    """The observer of one engine (called from its tokenizer pool and model thread); the fill
    ratio is over that engine's own batch token budget."""

    def __init__(self, max_batch_tokens: int) -> None:
        self.max_batch_tokens = max_batch_tokens
        self.tokenize = Histogram(SECONDS_BUCKETS)
        self.queue_wait = Histogram(SECONDS_BUCKETS)
        self.forward = Histogram(SECONDS_BUCKETS)
        self.pool = Histogram(SECONDS_BUCKETS)
        self.batch_tokens = Histogram(TOKENS_BUCKETS)
        self.fill_ratio = Histogram(FILL_BUCKETS)

    def tokenized(self, seconds: float) -> None:
        self.tokenize.observe(seconds)

    def batch(
        self, tokens: int, queue_waits: Sequence[float], forward_s: float, pool_s: float
    ) -> None:
        self.batch_tokens.observe(tokens)
        self.fill_ratio.observe(tokens / self.max_batch_tokens)
        self.queue_wait.observe_many(queue_waits)
        self.forward.observe(forward_s)
        self.pool.observe(pool_s)

    def stages(self) -> Iterator[tuple[str, Histogram]]:
        """``(stage, histogram)`` in :data:`ENGINE_STAGES` order."""
        histograms = (self.tokenize, self.queue_wait, self.forward, self.pool)
        yield from zip(ENGINE_STAGES, histograms, strict=True)
