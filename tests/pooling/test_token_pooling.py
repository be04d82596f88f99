"""pool_factor: hierarchical token pooling of documents' multi-vectors at index time, against
PyLate's ``pool_embeddings_hierarchical`` written out step by step (PyLate itself is not a
dependency): Ward clusters of the rows of the cosine distance matrix, the mean of each cluster
in cluster order, then the protected [CLS] row. Profiles take it per multi-vector, and a
profile that pools has another version than one that does not."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster import hierarchy

from poolq.worker.config.profile import Profile
from poolq.worker.config.versions import profile_version
from poolq.worker.pooling.token_pooling import maxclust_labels, pool_tokens
from poolq.worker.runtime.vectorizer import Encoded, pool_documents


def pylate_reference(doc: torch.Tensor, pool_factor: int, protected_tokens: int = 1):
    protected = doc[:protected_tokens]
    to_pool = doc[protected_tokens:]
    distance = 1 - torch.mm(to_pool, to_pool.t()).numpy()
    clusters = hierarchy.linkage(distance, method="ward")
    num_clusters = max(len(to_pool) // pool_factor, 1)
    labels = hierarchy.fcluster(clusters, t=num_clusters, criterion="maxclust")
    rows = []
    for cluster_id in range(1, num_clusters + 1):
        idx = torch.where(torch.tensor(labels == cluster_id))[0]
        if idx.numel() > 0:
            rows.append(to_pool[idx].mean(dim=0))
    rows.extend(protected)
    return torch.stack(rows)


def document(n: int, d: int, seed: int, topics: int = 0) -> np.ndarray:
    """Unit rows; with ``topics``, rows scattered around a few directions (like real tokens)."""
    rng = np.random.default_rng(seed)
    if topics:
        centres = rng.standard_normal((topics, d))
        x = centres[rng.integers(0, topics, n)] + 0.3 * rng.standard_normal((n, d))
    else:
        x = rng.standard_normal((n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(3, 120),
    pool_factor=st.integers(2, 4),
    topics=st.sampled_from([0, 3, 8]),
    seed=st.integers(0, 2**16),
)
def test_matches_pylate(n, pool_factor, topics, seed):
    x = document(n, 16, seed, topics)
    got = pool_tokens(x, pool_factor)
    want = pylate_reference(torch.from_numpy(x), pool_factor).numpy()
    assert got.dtype == np.float32
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


def test_rows_and_what_is_kept():
    x = document(101, 128, seed=1, topics=10)
    pooled = pool_tokens(x, 2)
    assert pooled.shape == (50 + 1, 128)  # 100 rows to pool -> 50 clusters, + the [CLS] row
    np.testing.assert_array_equal(pooled[-1], x[0])  # the protected row, unchanged, last
    assert pool_tokens(x, 1) is x  # off
    two = x[:2]
    assert pool_tokens(two, 2) is two  # one row besides [CLS]: nothing to cluster


def test_duplicate_tokens_merge_first():
    base = document(8, 32, seed=5)
    x = np.concatenate([base[:1], base, base])  # [CLS], then every token twice
    pooled = pool_tokens(x, 2)
    # 16 rows to pool into 8 clusters: exactly the pairs of equal rows
    assert pooled.shape == (9, 32)
    got = {tuple(np.round(r, 5)) for r in pooled[:-1]}
    assert got == {tuple(np.round(r, 5)) for r in base}


def test_pool_documents_pools_only_the_named_multivectors():
    colbert = document(41, 16, seed=2, topics=4)
    other = document(41, 16, seed=3)
    dense = np.ones(16, np.float32)
    encoded = [Encoded({"colbert": colbert, "other": other, "dense": dense}), ValueError("bad")]
    pool_documents(encoded, {"colbert": 2})
    vectors = encoded[0].vectors
    assert vectors["colbert"].shape == (21, 16)
    assert vectors["other"] is other and vectors["dense"] is dense
    assert isinstance(encoded[1], ValueError)


def test_profile_takes_pool_factor_per_multivector():
    p = Profile.from_dict(
        {
            "vectors": {
                "dense": {"model": "m", "task": "embed"},
                "colbert": {"model": "m", "task": "token_embed", "pool_factor": 2},
                "colbert_full": {"model": "m", "task": "token_embed"},
            }
        }
    )
    assert [v.pool_factor for v in p.vectors] == [None, 2, None]
    with pytest.raises(ValueError, match=r"vector 'dense': pool_factor is for multi-vectors"):
        Profile.from_dict({"vectors": {"dense": {"task": "embed", "pool_factor": 2}}})
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match=r"vector 'c': pool_factor: expected an integer >= 1"):
            Profile.from_dict({"vectors": {"c": {"task": "token_embed", "pool_factor": bad}}})


def test_pooling_changes_the_profile_version_and_nothing_else_does():
    def version(pool_factor):
        spec = {"model": "m", "task": "token_embed"}
        if pool_factor is not None:
            spec["pool_factor"] = pool_factor
        return profile_version(Profile.from_dict({"vectors": {"c": spec}}), {"m": "f"})

    assert version(None) == version(1)  # off: the versions points already carry stay valid
    assert version(2) != version(None) and version(2) != version(3)


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(2, 150),
    pool_factor=st.integers(2, 5),
    topics=st.sampled_from([0, 3, 8]),
    twice=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_maxclust_labels_are_fclusters_own(n, pool_factor, topics, twice, seed):
    """The labels (numbering included) of scipy's ``fcluster(..., criterion="maxclust")``, or
    None where merges tie at the cut; repeated tokens make ties."""
    x = document(n, 16, seed, topics)
    if twice:
        x = np.concatenate([x, x[: n // 2]])
    tree = hierarchy.linkage(1 - x @ x.T, method="ward")
    k = max(len(x) // pool_factor, 1)
    got = maxclust_labels(tree, len(x), k)
    want = hierarchy.fcluster(tree, t=k, criterion="maxclust")
    if got is None:
        heights = tree[:, 2]
        assert heights[len(x) - k - 1] == heights[len(x) - k]
    else:
        np.testing.assert_array_equal(got, want)
