"""BGE-M3-style pooler vs the formulas of BGE-M3's reference implementation."""

import torch
from torch.testing import assert_close

from poolq.worker.pooling import (
    PoolingCursor,
    PoolingMetadata,
    PoolingParams,
    SparseEmbedding,
    multi_output_pooler,
)
from tests.pooling.builders import HIDDEN, flat_hidden, seeded_linear

VOCAB = 30
CLS, EOS, PAD, UNK = 0, 2, 1, 3


def test_one_forward_serves_dense_sparse_and_colbert():
    lens = [5, 3]
    hidden = flat_hidden(lens)
    ids = [torch.tensor([CLS, 7, 9, 7, EOS]), torch.tensor([CLS, 11, EOS])]
    sparse_linear = seeded_linear(HIDDEN, 1, 5)
    colbert_linear = seeded_linear(HIDDEN, 6, 6)
    pooler = multi_output_pooler(
        hidden_size=HIDDEN,
        vocab_size=VOCAB,
        special_token_ids=[CLS, EOS, PAD, UNK],
        sparse_linear=sparse_linear,
        colbert_linear=colbert_linear,
    )
    assert pooler.get_supported_tasks() == {"embed", "sparse", "token_embed"}
    assert pooler.requires_token_ids
    tasks = ["embed", "sparse", "token_embed"]
    params = tuple(PoolingParams(t) for t in tasks for _ in lens)
    cursor = PoolingCursor.build(
        lens * 3, token_starts=[0, 5] * 3
    )  # every task reads the same rows
    md = PoolingMetadata(params, cursor, tuple(ids * 3))
    out = pooler(hidden, md)

    for i, h in enumerate(torch.split(hidden, lens)):
        dense, sparse, colbert = out[i], out[2 + i], out[4 + i]
        assert_close(dense, torch.nn.functional.normalize(h[0], dim=-1))
        # sparse: relu(linear) per token, max per token id, specials dropped
        w = torch.relu(sparse_linear(h)).squeeze(1)
        expected: dict[int, float] = {}
        for tok, weight in zip(ids[i].tolist(), w.tolist(), strict=True):
            if tok in (CLS, EOS, PAD, UNK) or weight <= 0:
                continue
            expected[tok] = max(expected.get(tok, 0.0), weight)
        assert isinstance(sparse, SparseEmbedding)
        assert sparse.indices.tolist() == sorted(expected)
        assert_close(sparse.values, torch.tensor([expected[k] for k in sorted(expected)]))
        # colbert: every token but CLS, projected and normalised
        assert_close(colbert, torch.nn.functional.normalize(colbert_linear(h[1:]), dim=-1))
