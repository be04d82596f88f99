"""The main-job demo (grows with the project: pooling now, full ingestion later)."""

from __future__ import annotations

import torch
from torch import nn

from worker.pooling import (
    AllPool,
    DispatchPooler,
    EmbeddingHead,
    MeanPool,
    PoolingMetadata,
    PoolingParams,
    SequencePooler,
    SparseEmbedding,
    SpladePooler,
    TokenEmbedHead,
    TokenPooler,
)


def run_demo() -> None:
    torch.manual_seed(0)
    hidden_size, vocab = 16, 50
    pooler = DispatchPooler(
        {
            "embed": SequencePooler(MeanPool(), EmbeddingHead(hidden_size)),
            "sparse": SpladePooler(nn.Linear(hidden_size, vocab), vocab),
            "token_embed": TokenPooler(AllPool(), TokenEmbedHead(8, nn.Linear(hidden_size, 8))),
        }
    )
    lens = [5, 3, 8]
    params = [PoolingParams(t) for t in ("embed", "sparse", "token_embed")]
    hidden = torch.randn(sum(lens), hidden_size)  # one flat, padding-free batch
    for p, o in zip(params, pooler(hidden, PoolingMetadata.build(params, lens)), strict=True):
        desc = (
            f"{len(o)} non-zeros" if isinstance(o, SparseEmbedding) else f"shape {tuple(o.shape)}"
        )
        print(f"{p.task:12s} -> {desc}")
