"""What the earlier chunks of a chunked prefill leave for the pooler of a sequence's final chunk.

A causal model's long sequence may be prefilled across several batches (its keys and values kept
in a cache meanwhile). Only the final chunk is pooled; the rows of the earlier chunks are gone,
so each pooling method gets what it needs of them here: CLS the first row, MEAN an FP32 running
sum (divided by the full length), ALL the earlier rows (concatenated before the final chunk's).
LAST needs nothing: it reads the final chunk's last row.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True, eq=False)
class PrefillPrefix:
    num_tokens: int  # prompt tokens of the earlier chunks
    first_row: torch.Tensor | None = None  # [H], the sequence's first row (CLS)
    sum_fp32: torch.Tensor | None = None  # [H] float32, sum of the earlier rows (MEAN)
    rows: torch.Tensor | None = None  # [num_tokens, H], the earlier rows (ALL)

    def need(self, what: str, method: str) -> torch.Tensor:
        value = {"first_row": self.first_row, "sum_fp32": self.sum_fp32, "rows": self.rows}[what]
        if value is None:
            raise ValueError(
                f"{method} pooling of a chunked prefill needs the earlier chunks' {what}, "
                "which were not kept"
            )
        return value
