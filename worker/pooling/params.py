"""Per-request pooling parameters."""

from __future__ import annotations

from dataclasses import dataclass

from poolq.worker.pooling.tasks import PoolingTask, parse_task


class PoolingParamsError(ValueError):
    """A request's pooling parameters do not fit the model. The message names the request."""


@dataclass(frozen=True)
class PoolingParams:
    """What one request wants from the pooler.

    ``dimensions``: Matryoshka truncation of an ``embed`` vector (before normalisation).
    ``use_activation``: ``None`` keeps the model default (L2 normalisation for ``embed`` and
    ``token_embed``, the classifier's activation for ``classify``); ``False`` returns raw values.
    ``top_k``: keep only the ``k`` largest weights of a ``sparse`` output (a profile's
    ``max_terms``). ``min_weight``: drop a ``sparse`` output's weights below it.
    """

    task: PoolingTask = "embed"
    dimensions: int | None = None
    use_activation: bool | None = None
    top_k: int | None = None
    min_weight: float | None = None

    def __post_init__(self) -> None:
        parse_task(self.task)
        if self.dimensions is not None and (
            isinstance(self.dimensions, bool) or not isinstance(self.dimensions, int)
        ):
            raise ValueError(f"dimensions must be an int or None, got {self.dimensions!r}")
        if self.top_k is not None and (
            isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1
        ):
            raise ValueError(f"top_k must be a positive int or None, got {self.top_k!r}")
        if self.min_weight is not None and (
            isinstance(self.min_weight, bool)
            or not isinstance(self.min_weight, int | float)
            or not self.min_weight >= 0
        ):
            raise ValueError(f"min_weight must be a number >= 0 or None, got {self.min_weight!r}")
        if self.min_weight is not None and self.task != "sparse":
            raise ValueError(f"min_weight applies to task 'sparse' only, got task {self.task!r}")
        if self.use_activation is not None and not isinstance(self.use_activation, bool):
            raise ValueError(
                f"use_activation must be True, False or None, got {self.use_activation!r}"
            )
        if self.dimensions is not None and self.task != "embed":
            raise ValueError(f"dimensions applies to task 'embed' only, got task {self.task!r}")
        if self.top_k is not None and self.task != "sparse":
            raise ValueError(f"top_k applies to task 'sparse' only, got task {self.task!r}")
