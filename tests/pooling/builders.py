"""Builders for tiny pooling fixtures: flat hidden states, metadata and a four-task model."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from poolq.worker.pooling import (
    AllPool,
    ClassifierHead,
    CLSPool,
    DispatchPooler,
    EmbeddingHead,
    LastPool,
    MeanPool,
    PoolingMetadata,
    PoolingParams,
    SequencePooler,
    SpladePooler,
    TokenEmbedHead,
    TokenPooler,
)
from poolq.worker.pooling.activations import classification_activation

HIDDEN = 16
VOCAB = 40
EMBED_DIM = 12
COLBERT_DIM = 8
NUM_LABELS = 3


def flat_hidden(
    lens: Sequence[int], width: int = HIDDEN, seed: int = 0, dtype=torch.float32
) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(sum(lens), width, generator=g).to(dtype)


def token_ids(lens: Sequence[int], seed: int = 0, vocab: int = VOCAB) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed + 1)
    return [torch.randint(0, vocab, (n,), generator=g) for n in lens]


def metadata(
    lens: Sequence[int],
    params: Sequence[PoolingParams] | None = None,
    ids: Sequence[torch.Tensor] | None = None,
    **kw,
) -> PoolingMetadata:
    params = params if params is not None else [PoolingParams("embed")] * len(lens)
    return PoolingMetadata.build(params, lens, prompt_token_ids=ids, **kw)


def seeded_linear(n_in: int, n_out: int, seed: int, bias: bool = True) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(n_in, n_out, bias=bias)


def four_task_pooler(embed_method: str = "LAST", remove_ids: Sequence[int] = ()) -> DispatchPooler:
    """embed (LAST/CLS/MEAN + projector, Matryoshka), classify (CLS), sparse (SPLADE over a
    linear 'MLM head'), token_embed (ALL + projection)."""
    methods = {"CLS": CLSPool, "LAST": LastPool, "MEAN": MeanPool}
    embed = SequencePooler(
        methods[embed_method](),
        EmbeddingHead(EMBED_DIM, seeded_linear(HIDDEN, EMBED_DIM, 1), is_matryoshka=True),
    )
    classify = SequencePooler(
        CLSPool(),
        ClassifierHead(
            seeded_linear(HIDDEN, NUM_LABELS, 2),
            classification_activation(None, NUM_LABELS),
            num_labels=NUM_LABELS,
        ),
    )
    sparse = SpladePooler(seeded_linear(HIDDEN, VOCAB, 3), VOCAB, remove_token_ids=remove_ids)
    token = TokenPooler(
        AllPool(), TokenEmbedHead(COLBERT_DIM, seeded_linear(HIDDEN, COLBERT_DIM, 4, bias=False))
    )
    return DispatchPooler(
        {"embed": embed, "classify": classify, "sparse": sparse, "token_embed": token}
    )
