"""SPLADE pooling when the graph already took the max over tokens (``graph.py``).

The runner calls the encoder, then the pooler, on the same thread; the encoder keeps the pooled
``[V]`` weights of each sequence by its first packed row. The dispatch pooler hands this pooler
either the forward's hidden states or a view of a slice of them (one task's rows): the view's
offset into the forward's storage says which packed rows it holds. Anything else (a gathered
copy, a sum-mode head) goes to the torch head, so the outputs never depend on the path.
"""

from __future__ import annotations

import numpy as np
import torch

from poolq.worker.engine.openvino.encoder import OpenVinoEncoder
from poolq.worker.pooling import SpladePooler
from poolq.worker.pooling.metadata import PoolingMetadata
from poolq.worker.pooling.outputs import PoolerOutput
from poolq.worker.pooling.splade import sparsify


class GraphSpladePooler(SpladePooler):
    """:class:`SpladePooler` reading the graph's pooled weights; its own head as the fallback."""

    def __init__(self, base: SpladePooler, encoder: OpenVinoEncoder) -> None:
        super().__init__(
            base.mlm_head,
            base.vocab_size,
            mode=base.mode,
            remove_token_ids=base.remove_token_ids,
            top_k=base.top_k,
        )
        self.compute_dtype = base.compute_dtype
        self.between_blocks = base.between_blocks
        self._encoder = [encoder]  # a list: not a sub-module (no double registration)
        self.graph_hits = 0  # requests served from the graph's weights (tests)

    def _pooled(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> np.ndarray | None:
        enc = self._encoder[0]
        whole = enc.last_hidden
        if self.mode != "max" or whole is None or not enc.last_sparse or hidden.dim() != 2:
            return None
        if hidden.untyped_storage().data_ptr() != whole.untyped_storage().data_ptr():
            return None  # a gathered copy: rows unknown
        shift = hidden.storage_offset() // max(1, hidden.shape[1])
        cursor = metadata.cursor
        starts = (cursor.token_starts_cpu + shift).tolist()
        counts = cursor.num_scheduled_tokens_cpu.tolist()
        rows = []
        for s, n in zip(starts, counts, strict=True):
            row = enc.last_sparse.get(int(s))
            if row is None or n <= 0:
                return None
            rows.append(row)
        return np.stack(rows) if rows else None

    def forward(self, hidden: torch.Tensor, metadata: PoolingMetadata) -> list[PoolerOutput]:
        pooled = self._pooled(hidden, metadata)
        if pooled is None:
            return super().forward(hidden, metadata)
        self.graph_hits += len(pooled)
        weights = torch.from_numpy(pooled)  # [n, V]
        top_k = [p.top_k if p.top_k is not None else self.top_k for p in metadata.pooling_params]
        min_weight = [p.min_weight for p in metadata.pooling_params]
        return list(sparsify(weights, top_k, min_weight))
