"""Inference-free sparse queries (OpenSearch neural-sparse doc-v2/v3-distill): a model that ships
``idf.json`` (token -> weight) encodes documents with its MLM head, and a query as its tokens
weighted by that table, with no forward pass. Special tokens are left out; a token repeated in
the query counts once."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from poolq.worker.engine.execution.tokenizer import TextTokenizer
from poolq.worker.pooling import SparseEmbedding

IDF_FILE = "idf.json"


@dataclass(frozen=True)
class IdfWeights:
    weights: torch.Tensor  # float32 [vocab]: the idf of each token id (0 where the table has none)
    special_ids: frozenset[int]

    @classmethod
    def from_folder(cls, path: Path, tok: TextTokenizer) -> IdfWeights | None:
        f = path / IDF_FILE
        if not f.is_file():
            return None
        table = json.loads(f.read_text(encoding="utf-8"))
        if not isinstance(table, dict):
            raise ValueError(f"{f}: expected an object token -> weight, got {type(table).__name__}")
        weights = torch.zeros(tok.vocab_size, dtype=torch.float32)
        vocab = tok.backend.get_vocab(with_added_tokens=True)
        for token, value in table.items():
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ValueError(f"{f}: token {token!r}: expected a number, got {value!r}")
            if token in vocab and vocab[token] < weights.shape[0]:
                weights[vocab[token]] = float(value)
        return cls(weights, tok.special_token_ids)

    def encode(self, token_ids: list[int], top_k: int | None = None) -> SparseEmbedding:
        ids = sorted({t for t in token_ids if t not in self.special_ids})
        idx = torch.tensor(ids, dtype=torch.int64)
        values = self.weights[idx] if ids else torch.zeros(0)
        keep = values > 0
        idx, values = idx[keep], values[keep]
        if top_k is not None and values.numel() > top_k:
            best = values.topk(top_k).indices.sort().values
            idx, values = idx[best], values[best]
        return SparseEmbedding(idx.to(torch.int32), values)
