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
    from scipy.cluster.hierarchy import linkage

    rest = np.ascontiguousarray(rest, dtype=np.float32)
    distances = 1 - rest @ rest.T  # [n, n] float32 (its rows are Ward's observations)
    labels = maxclust_labels(linkage(distances, method="ward"), n, max(n // pool_factor, 1))
    order = np.argsort(labels, kind="stable")
    ordered = labels[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])  # one per cluster present
    sums = np.add.reduceat(rest[order].astype(np.float64), starts, axis=0)  # [k, d]
    counts = np.diff(np.r_[starts, n])
    means = (sums / counts[:, None]).astype(np.float32)
    return np.concatenate([means, x[:protected].astype(np.float32, copy=False)])


def maxclust_labels(z: np.ndarray, n: int, t: int) -> np.ndarray:
    """scipy's ``fcluster(z, t, criterion="maxclust")`` labels (1..k) of a linkage ``z`` of
    ``n`` leaves, without its per-call validation (which cost as much as the clustering): the
    cut is the smallest merge height that leaves at most ``t`` clusters (ties at that height
    merge together), and clusters are numbered in scipy's order (below)."""
    if t >= n:  # no merge: every leaf its own cluster, in leaf order
        return np.arange(1, n + 1, dtype=np.int64)
    merges = n - 1
    md = [0.0] * merges  # per merge, the highest merge below it (scipy's max_dists)
    leaves: list[list[int]] = [[]] * merges
    for i in range(merges):
        a, b, h = int(z[i, 0]), int(z[i, 1]), float(z[i, 2])
        la = [a] if a < n else leaves[a - n]
        lb = [b] if b < n else leaves[b - n]
        if a >= n:
            h = max(h, md[a - n])
        if b >= n:
            h = max(h, md[b - n])
        md[i], leaves[i] = h, la + lb
    cut = sorted(md)[n - t - 1]
    labels = np.zeros(n, dtype=np.int64)
    k = 0
    # scipy's walk (cluster_monocrit): a node under the cut is one cluster; else its internal
    # children are walked first (left, then right), and its leaf children numbered on the way
    # back (left, then right)
    stack: list[tuple[int, bool]] = [(2 * n - 2, False)]
    while stack:
        node, back = stack.pop()
        i = node - n
        if not back and md[i] <= cut:
            k += 1
            labels[leaves[i]] = k
            continue
        kids = (int(z[i, 0]), int(z[i, 1]))
        if back:
            for c in kids:
                if c < n:
                    k += 1
                    labels[c] = k
            continue
        stack.append((node, True))
        stack += [(c, False) for c in reversed(kids) if c >= n]
    return labels
