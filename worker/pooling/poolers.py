"""Poolers: a pooling method composed with a head, behind one interface.

A pooler declares the tasks it serves (``get_supported_tasks``), whether it needs the host token
ids before a batch is built (``requires_token_ids``), and checks a request's parameters
(``check_params``). ``forward`` turns the flat hidden states of its requests into one output per
request, in request order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch
from torch import nn

from poolq.worker.pooling.heads import ClassifierHead, EmbeddingHead, ScoreHead, TokenEmbedHead
from poolq.worker.pooling.metadata import PoolingMetadata
from poolq.worker.pooling.methods import SequencePoolingMethod, TokenPoolingMethod
from poolq.worker.pooling.outputs import PoolerOutput
from poolq.worker.pooling.params import PoolingParams
from poolq.worker.pooling.tasks import PoolingTask, parse_task


class Pooler(nn.Module, ABC):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with torch.inference_mode():  # poolers never build autograd graphs
            return super().__call__(*args, **kwargs)

    @abstractmethod
    def get_supported_tasks(self) -> frozenset[PoolingTask]: ...

    @property
    def requires_token_ids(self) -> bool:
        return False

    def check_params(self, params: PoolingParams) -> None:
        """Raise ``ValueError`` (expected vs got) when ``params`` do not fit this pooler."""
        parse_task(params.task, supported=self.get_supported_tasks())

    def output_dim(self, task: PoolingTask) -> int | None:
        """Width of the task's vectors (vocabulary size for ``sparse``), if known."""
        return None

    @abstractmethod
    def forward(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> list[PoolerOutput]: ...


class SequencePooler(Pooler):
    """CLS/LAST/MEAN rows -> an embedding head (``embed``), a classifier head (``classify``) or
    a score head (``score``)."""

    def __init__(
        self, method: SequencePoolingMethod, head: EmbeddingHead | ClassifierHead | ScoreHead
    ) -> None:
        super().__init__()
        self.method = method
        self.head = head
        self.task: PoolingTask = (
            "embed"
            if isinstance(head, EmbeddingHead)
            else "score"
            if isinstance(head, ScoreHead)
            else "classify"
        )

    def get_supported_tasks(self) -> frozenset[PoolingTask]:
        return frozenset({self.task})

    def check_params(self, params: PoolingParams) -> None:
        super().check_params(params)
        if isinstance(self.head, EmbeddingHead):  # the one head with request options to check
            self.head.check_params(params)

    def output_dim(self, task: PoolingTask) -> int | None:
        return (
            self.head.num_labels if isinstance(self.head, ClassifierHead) else self.head.output_dim
        )

    def forward(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> list[PoolerOutput]:
        pooled = self.method(hidden, metadata)  # [n, H]
        return list(self.head(pooled, metadata.pooling_params))


class TokenPooler(Pooler):
    """ALL rows -> a token-embedding head (``token_embed``: multi-vectors)."""

    def __init__(self, method: TokenPoolingMethod, head: TokenEmbedHead) -> None:
        super().__init__()
        self.method = method
        self.head = head

    def get_supported_tasks(self) -> frozenset[PoolingTask]:
        return frozenset({"token_embed"})

    @property
    def requires_token_ids(self) -> bool:
        return self.head.requires_token_ids

    def output_dim(self, task: PoolingTask) -> int | None:
        return self.head.output_dim

    def forward(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> list[PoolerOutput]:
        rows = self.method(hidden, metadata)  # per request [n_i, H]
        ids_cpu = metadata.token_ids_cpu() if self.head.requires_token_ids else None
        return list(self.head(rows, metadata.pooling_params, ids_cpu, metadata.keep_rows_cpu))
