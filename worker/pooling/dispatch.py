"""DispatchPooler: route each request of a mixed batch to the pooler of its task.

For each task group the metadata is sliced to the group's requests and the hidden states to the
group's rows, and the group cursor's row indices are **re-offset** to the sliced rows
(``first - token_offset``). Without the shift a sub-pooler would read another request's rows.
Offsets come from host counts: no device-to-host sync.

The engine sorts a batch by task, so each group is one contiguous slice (a view, no copy). The
pooler is also correct for interleaved orders and for requests that share rows (several tasks
over one forward of the same text): such a group's rows are gathered into a compact tensor and
each request is re-offset by its own amount.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import cast

import torch

from poolq.worker.pooling.metadata import PoolingMetadata
from poolq.worker.pooling.outputs import PoolerOutput
from poolq.worker.pooling.params import PoolingParams, PoolingParamsError
from poolq.worker.pooling.poolers import Pooler
from poolq.worker.pooling.tasks import PoolingTask, parse_task


class DispatchPooler(Pooler):
    def __init__(self, poolers_by_task: Mapping[str, Pooler]) -> None:
        super().__init__()
        if not poolers_by_task:
            raise ValueError("DispatchPooler needs at least one task -> pooler entry")
        for task, pooler in poolers_by_task.items():
            parse_task(task)
            if task not in pooler.get_supported_tasks():
                raise ValueError(
                    f"pooler for task {task!r} ({type(pooler).__name__}) supports "
                    f"{sorted(pooler.get_supported_tasks())}, not {task!r}"
                )
        self.poolers_by_task: dict[PoolingTask, Pooler] = {
            parse_task(t): p for t, p in poolers_by_task.items()
        }
        # Registered as sub-modules so .to(device) moves their weights.
        self.pooler_modules = torch.nn.ModuleList(
            list(dict.fromkeys(self.poolers_by_task.values()))
        )

    def get_supported_tasks(self) -> frozenset[PoolingTask]:
        return frozenset(self.poolers_by_task)

    @property
    def requires_token_ids(self) -> bool:
        return any(p.requires_token_ids for p in self.poolers_by_task.values())

    def check_params(self, params: PoolingParams) -> None:
        parse_task(params.task, supported=self.get_supported_tasks())
        self.poolers_by_task[params.task].check_params(params)

    def output_dim(self, task: PoolingTask) -> int | None:
        return self.poolers_by_task[task].output_dim(task) if task in self.poolers_by_task else None

    def validate(
        self, params: Sequence[PoolingParams], request_ids: Sequence[str] | None = None
    ) -> None:
        """Check every request; the error names the first bad request and the allowed values."""
        for i, p in enumerate(params):
            try:
                self.check_params(p)
            except ValueError as exc:
                name = repr(request_ids[i]) if request_ids is not None else f"#{i}"
                raise PoolingParamsError(f"request {name}: {exc}") from exc

    def forward(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> list[PoolerOutput]:
        tasks = [p.task for p in metadata.pooling_params]
        cursor = metadata.cursor
        if len(set(tasks)) == 1 and cursor.is_tiled and cursor.num_tokens == hidden.shape[0]:
            return self.poolers_by_task[tasks[0]](hidden, metadata)  # single-task fast path

        groups: dict[PoolingTask, list[int]] = {}
        for i, task in enumerate(tasks):
            groups.setdefault(task, []).append(i)
        outputs: list[PoolerOutput | None] = [None] * len(tasks)
        for task, idx in groups.items():
            group_hidden, group_md = self._slice_group(hidden, metadata.select(idx))
            for i, out in zip(idx, self.poolers_by_task[task](group_hidden, group_md), strict=True):
                outputs[i] = out
        return cast(list[PoolerOutput], outputs)  # every request is in one group: all filled

    def _slice_group(
        self, hidden: torch.Tensor, md: PoolingMetadata
    ) -> tuple[torch.Tensor, PoolingMetadata]:
        cursor = md.cursor
        starts_cpu = cursor.token_starts_cpu
        counts_cpu = cursor.num_scheduled_tokens_cpu
        contiguous = bool(torch.equal(starts_cpu[1:], (starts_cpu + counts_cpu)[:-1]))
        if contiguous:
            token_offset = int(starts_cpu[0])
            group_hidden = hidden[token_offset : token_offset + cursor.num_tokens]  # a view
            shift: int | torch.Tensor = token_offset
        else:
            # Gather the group's rows into one compact tensor; each request moves by its own amount.
            rows_cpu = torch.cat(
                [
                    torch.arange(s, s + c)
                    for s, c in zip(starts_cpu.tolist(), counts_cpu.tolist(), strict=True)
                ]
            )
            group_hidden = hidden.index_select(0, cursor._to_dev(rows_cpu))
            shift = starts_cpu - (torch.cumsum(counts_cpu, 0) - counts_cpu)
        return group_hidden, replace(md, cursor=cursor.shifted(shift))
