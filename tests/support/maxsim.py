"""MaxSim, the late-interaction score, computed here: the reference the tests and benchmarks
check Qdrant's own rerank against (production reranks inside Qdrant, Edge or server)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def maxsim(query: np.ndarray, doc: np.ndarray) -> float:
    """Late-interaction score with cosine similarity: for each query row the best cosine over
    the document's rows, summed (what Qdrant's MAX_SIM comparator computes)."""
    query, doc = np.asarray(query, dtype=np.float64), np.asarray(doc, dtype=np.float64)
    q = query / np.maximum(np.linalg.norm(query, axis=1, keepdims=True), 1e-12)
    d = doc / np.maximum(np.linalg.norm(doc, axis=1, keepdims=True), 1e-12)
    return float((q @ d.T).max(axis=1).sum())


def maxsim_many(query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
    """MaxSim of one query against many documents in two matrix operations:
    ``[n_q, d] @ [sum n_doc, d].T``, then a max over each document's columns."""
    query = np.asarray(query, dtype=np.float32)
    q = query / np.maximum(np.linalg.norm(query, axis=1, keepdims=True), 1e-12)
    stacked = np.concatenate([np.asarray(d, dtype=np.float32) for d in docs], axis=0)
    stacked = stacked / np.maximum(np.linalg.norm(stacked, axis=1, keepdims=True), 1e-12)
    sims = q @ stacked.T  # [n_q, sum n_doc]
    starts = np.cumsum([0] + [len(d) for d in docs[:-1]])
    return np.maximum.reduceat(sims, starts, axis=1).sum(axis=0)
