"""Several heads on one backbone (BGE-M3): one forward serves ``embed``, ``sparse`` and
``token_embed`` for the same text.

BGE-M3's heads: dense = CLS row, L2-normalised; sparse = ``relu(sparse_linear(h_t))`` per token,
max-merged per token id, special tokens dropped; ColBERT = ``colbert_linear(h_t)`` for every token
but the first (CLS), L2-normalised.

The engine runs the backbone once per text and lists one pooling request per (text, task), all
pointing at the text's rows; the :class:`DispatchPooler` built here routes each to its head.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from poolq.worker.pooling.dispatch import DispatchPooler
from poolq.worker.pooling.heads import EmbeddingHead, TokenEmbedHead
from poolq.worker.pooling.metadata import PoolingMetadata
from poolq.worker.pooling.methods import AllPool, CLSPool
from poolq.worker.pooling.outputs import PoolerOutput, SparseEmbedding
from poolq.worker.pooling.poolers import Pooler, SequencePooler, TokenPooler
from poolq.worker.pooling.tasks import PoolingTask


class TokenWeightSparsePooler(Pooler):
    """Per-token scalar weights ``relu(linear(h_t))``, max-merged per token id -> sparse vector
    over the vocabulary (BGE-M3's lexical head)."""

    def __init__(
        self, weight_linear: nn.Linear, vocab_size: int, special_token_ids: Sequence[int]
    ) -> None:
        super().__init__()
        if weight_linear.out_features != 1:
            raise ValueError(f"sparse_linear must have 1 output, got {weight_linear.out_features}")
        self.weight_linear = weight_linear.float()
        self.vocab_size = vocab_size
        self.special_token_ids = tuple(sorted(int(t) for t in special_token_ids))

    def get_supported_tasks(self) -> frozenset[PoolingTask]:
        return frozenset({"sparse"})

    @property
    def requires_token_ids(self) -> bool:
        return True

    def output_dim(self, task: PoolingTask) -> int | None:
        return self.vocab_size

    def forward(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> list[PoolerOutput]:
        cursor = metadata.cursor
        if len(cursor) == 0:
            return []
        weights = torch.relu(self.weight_linear(hidden[: cursor.num_tokens].float()))[:, 0]  # [T]
        ids_cpu = metadata.token_ids_cpu()  # per request [n_i]
        out: list[PoolerOutput] = []
        special = torch.tensor(self.special_token_ids, dtype=torch.int64)
        per_request = torch.split(weights, cursor.num_scheduled_tokens_cpu.tolist())
        for w, ids, p in zip(per_request, ids_cpu, metadata.pooling_params, strict=True):
            keep_cpu = ~torch.isin(ids, special)
            ids_dev = ids.to(w.device, non_blocking=True)
            keep_dev = keep_cpu.to(w.device, non_blocking=True)
            uniq, inverse = torch.unique(ids_dev[keep_dev], return_inverse=True)  # sorted ids
            merged = torch.zeros(uniq.shape[0], dtype=torch.float32, device=w.device)
            merged.scatter_reduce_(0, inverse, w[keep_dev], reduce="amax", include_self=False)
            nz = merged > 0
            if p.min_weight:
                nz &= merged >= p.min_weight
            indices, values = uniq[nz].to(torch.int32), merged[nz]
            if p.top_k is not None and len(values) > p.top_k:
                keep = values.topk(p.top_k).indices.sort().values
                indices, values = indices[keep], values[keep]
            out.append(SparseEmbedding(indices, values))
        return out


def multi_output_pooler(
    *,
    hidden_size: int,
    vocab_size: int,
    special_token_ids: Sequence[int],
    sparse_linear: nn.Linear | None = None,
    colbert_linear: nn.Linear | None = None,
) -> DispatchPooler:
    """A BGE-M3-style pooler: CLS dense always; sparse and ColBERT heads when given."""
    poolers: dict[str, Pooler] = {"embed": SequencePooler(CLSPool(), EmbeddingHead(hidden_size))}
    if sparse_linear is not None:
        poolers["sparse"] = TokenWeightSparsePooler(sparse_linear, vocab_size, special_token_ids)
    if colbert_linear is not None:
        head = TokenEmbedHead(colbert_linear.out_features, colbert_linear, drop_first_token=True)
        poolers["token_embed"] = TokenPooler(AllPool(), head)
    return DispatchPooler(poolers)
