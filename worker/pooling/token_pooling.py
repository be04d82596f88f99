"""Hierarchical token pooling of a document's multi-vector at index time (``pool_factor``).

As PyLate's ``pool_embeddings_hierarchical``: the first ``protected`` rows (the [CLS] row) are
kept as they are; the other ``n`` rows are clustered by Ward linkage over the rows of their
cosine distance matrix ``1 - X Xᵀ`` (scipy, the same call PyLate makes), cut into
``max(n // pool_factor, 1)`` clusters, and each cluster becomes the mean of its rows, in
cluster order, followed by the protected rows. Queries are never pooled: only documents are
(late interaction keeps every query token, and a pooled document row is the centroid of tokens
that were alike, so MaxSim against it changes little).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.cluster.hierarchy import ClusterWarning

# the rows of a distance matrix are Ward's observations on purpose (as PyLate): not a mistake
warnings.filterwarnings("ignore", "The symmetric non-negative hollow", ClusterWarning)

PROTECTED_TOKENS = 1  # PyLate's default: the [CLS] row is never merged


def pool_tokens(x: np.ndarray, pool_factor: int, protected: int = PROTECTED_TOKENS) -> np.ndarray:
    """``float32 [n_rows, d]`` -> ``float32 [m_rows, d]`` with ``m_rows`` about
    ``n_rows / pool_factor`` (+ the protected rows). ``pool_factor`` 1, or fewer than two rows
    to cluster: ``x`` itself."""
    rest = x[protected:]
    n = rest.shape[0]
    if pool_factor <= 1 or n < 2:
        return x
    from scipy.cluster.hierarchy import fcluster, linkage

    rest = np.ascontiguousarray(rest, dtype=np.float32)
    # [n, n] float32 (its rows are Ward's observations). einsum's own loop, not BLAS: a
    # thread pool (torch's OpenMP, OpenBLAS) for a ~100x100 product costs more than it saves,
    # and on a busy machine 10-100x more (its threads wait for cores)
    distances = 1 - np.einsum("id,jd->ij", rest, rest)
    labels = fcluster(
        linkage(distances, method="ward"), t=max(n // pool_factor, 1), criterion="maxclust"
    )
    order = np.argsort(labels, kind="stable")
    ordered = labels[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # one per cluster present
    sums = np.add.reduceat(rest[order].astype(np.float64), starts, axis=0)  # [k, d]
    counts = np.diff(np.r_[starts, n])
    means = (sums / counts[:, None]).astype(np.float32)
    return np.concatenate([means, x[:protected].astype(np.float32, copy=False)])
