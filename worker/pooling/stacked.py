"""StackedPooler: several poolers of one task over the same rows, their outputs side by side.

Classifiers that share a backbone (``worker/runtime/labels.py``) each pool a request's rows
their own way and score them with their own head; a request gets ``[d1 + d2 + ...]``, the
first pooler's scores first. Every sub-pooler sees the same metadata, so their outputs line up
request by request.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from poolq.worker.pooling.metadata import PoolingMetadata
from poolq.worker.pooling.outputs import PoolerOutput
from poolq.worker.pooling.params import PoolingParams
from poolq.worker.pooling.poolers import Pooler
from poolq.worker.pooling.tasks import PoolingTask


class StackedPooler(Pooler):
    def __init__(self, task: PoolingTask, poolers: Sequence[Pooler]) -> None:
        super().__init__()
        if not poolers:
            raise ValueError("StackedPooler needs at least one pooler")
        for p in poolers:
            if task not in p.get_supported_tasks():
                raise ValueError(
                    f"pooler {type(p).__name__} supports {sorted(p.get_supported_tasks())}, "
                    f"not {task!r}"
                )
        self.task = task
        self.stacked = torch.nn.ModuleList(poolers)

    def get_supported_tasks(self) -> frozenset[PoolingTask]:
        return frozenset({self.task})

    @property
    def requires_token_ids(self) -> bool:
        return any(p.requires_token_ids for p in self._poolers)

    @property
    def _poolers(self) -> list[Pooler]:
        return [p for p in self.stacked if isinstance(p, Pooler)]

    def check_params(self, params: PoolingParams) -> None:
        for p in self._poolers:
            p.check_params(params)

    def output_dim(self, task: PoolingTask) -> int | None:
        dims = [p.output_dim(task) for p in self._poolers]
        return None if any(d is None for d in dims) else sum(d for d in dims if d is not None)

    def forward(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> list[PoolerOutput]:
        outputs = [p(hidden, metadata) for p in self._poolers]  # per pooler, per request
        return [
            torch.cat([o for o in parts if isinstance(o, torch.Tensor)])
            for parts in zip(*outputs, strict=True)
        ]
