"""Pooled output types."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SparseEmbedding:
    """Lexical weights shaped like Qdrant's ``SparseVector``.

    ``indices``: ``int32[nnz]``, strictly increasing vocabulary ids; ``values``: ``float32[nnz]``,
    all non-zero.
    """

    indices: torch.Tensor
    values: torch.Tensor

    def __post_init__(self) -> None:
        if self.indices.shape != self.values.shape or self.indices.dim() != 1:
            raise ValueError(
                f"indices and values must be 1-D of equal length, got {tuple(self.indices.shape)} "
                f"and {tuple(self.values.shape)}"
            )

    def __len__(self) -> int:
        return int(self.indices.numel())

    def cpu(self) -> SparseEmbedding:
        return SparseEmbedding(self.indices.cpu(), self.values.cpu())

    def to_dense(self, size: int) -> torch.Tensor:
        out = torch.zeros(size, dtype=self.values.dtype, device=self.values.device)
        out[self.indices.long()] = self.values
        return out

    def as_dict(self) -> dict[str, list[int] | list[float]]:
        return {"indices": self.indices.tolist(), "values": self.values.tolist()}


PoolerOutput = torch.Tensor | SparseEmbedding
