"""Search through the endpoint: the requests ``sinks/query.py`` builds (dense, sparse, hybrid with
RRF and DBSF, rerank, filters, score thresholds, one hit per document), sent by ClientStore
over gRPC, rank as the same requests run by an EdgeStore on the same points; dense and sparse
as qdrant-client's local mode too (the oracle); and the Query API's own options (offset,
payload and vector selectors) as a server applies them."""

import pytest
from qdrant_client import models

from poolq.sinks.collections import ensure_collection
from poolq.sinks.search import SearchRequest, search_points
from poolq.sinks.store.edge import EdgeStore
from poolq.wire.payload import DOC_ID
from tests.endpoint.conftest import points, query_vectors, schema
from tests.sinks.conftest import local_oracle

pytestmark = pytest.mark.slow
SCHEMA = schema("t")
FILTERS = [(), ("lang=en",), ("n>=10", "n<40", "flag=false")]
CASES = [
    (mode, filters, fusion)
    for mode in ("dense", "sparse", "hybrid", "rerank")
    for filters in FILTERS
    for fusion in (["rrf", "dbsf"] if mode in ("hybrid", "rerank") else ["rrf"])
]


@pytest.fixture(scope="module")
def stores(store, tmp_path_factory):
    """The same 90 points (30 documents of 3 chunks) behind the endpoint, in an EdgeStore of
    its own, and in the local-mode oracle."""
    edge, oracle = EdgeStore(tmp_path_factory.mktemp("edge")), local_oracle()
    written = points(90, seed=4, docs=30)
    for s in (store, edge, oracle):
        ensure_collection(s, SCHEMA)
        s.upsert("t", written)
    yield store, edge, oracle
    edge.close()
    oracle.close()


def same_ranking(ours, theirs, abs_=1e-5):
    """Equal scores in the same order; points of equal score (RRF ties) in either order,
    unless the limit cuts through them."""
    assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], abs=abs_)
    ties: dict[float, tuple[set, set]] = {}
    for a, b in zip(ours, theirs, strict=True):
        t = ties.setdefault(round(a.score, 4), (set(), set()))
        t[0].add(a.id)
        t[1].add(b.id)
    last = round(ours[-1].score, 4) if ours else None
    for score, (a_ids, b_ids) in ties.items():
        if score != last:
            assert a_ids == b_ids, score


@pytest.mark.parametrize(("mode", "filters", "fusion"), CASES)
def test_search_ranks_as_on_edge(stores, mode, filters, fusion):
    endpoint, edge, _ = stores
    q = query_vectors(9)
    req = SearchRequest("t", mode, 8, filters, fusion=fusion, candidates=25)
    ours = search_points(endpoint, SCHEMA, req, q)
    assert ours, "nothing to compare"
    same_ranking(ours, search_points(edge, SCHEMA, req, q))
    if len(ours) > 3 and ours[2].score != ours[3].score:  # a score threshold cuts the same
        cut = (ours[2].score + ours[3].score) / 2
        kept = SearchRequest("t", mode, 8, filters, cut, fusion=fusion, candidates=25)
        assert [h.id for h in search_points(endpoint, SCHEMA, kept, q)] == [h.id for h in ours[:3]]


@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid", "rerank"])
def test_one_hit_per_document_as_on_edge(stores, mode):
    endpoint, edge, _ = stores
    q = query_vectors(5)
    req = SearchRequest("t", mode, 6, candidates=20, group_by=DOC_ID, group_size=2)
    ours, theirs = search_points(endpoint, SCHEMA, req, q), search_points(edge, SCHEMA, req, q)
    assert len({h.doc_id for h in ours}) == len(ours) == 6
    same_ranking(ours, theirs)
    if mode != "hybrid":  # fused scores tie, and Edge orders ties differently in each process
        assert [[c.id for c in h.chunks or []] for h in ours] == [
            [c.id for c in h.chunks or []] for h in theirs
        ]


@pytest.mark.parametrize("mode", ["dense", "sparse"])
def test_dense_and_sparse_rank_as_the_oracle(stores, mode):
    endpoint, _, oracle = stores
    q = query_vectors(2)
    for group_by in (None, DOC_ID):
        req = SearchRequest("t", mode, 7, ("flag=false",), group_by=group_by)
        same_ranking(search_points(endpoint, SCHEMA, req, q), search_points(oracle, SCHEMA, req, q))


def test_query_options(stores, client):
    q = query_vectors(1)["dense"].tolist()
    top = client.query_points("t", query=q, using="dense", limit=8).points
    assert top[0].payload[DOC_ID] and top[0].vector is None  # qdrant-client's defaults
    page = client.query_points("t", query=q, using="dense", limit=5, offset=3).points
    assert [p.id for p in page] == [p.id for p in top[3:8]]
    picked = client.query_points(
        "t", query=q, using="dense", limit=2, with_payload=[DOC_ID], with_vectors=["sparse"]
    ).points
    assert set(picked[0].payload) == {DOC_ID} and set(picked[0].vector) == {"sparse"}
    groups = client.query_points_groups(
        "t", group_by=DOC_ID, query=q, using="dense", limit=3, group_size=2, with_payload=False
    ).groups
    assert len(groups) == 3 and all(len(g.hits) == 2 for g in groups)
    assert all(not h.payload for g in groups for h in g.hits)  # grouped, then trimmed
    fused = client.query_points(
        "t",
        prefetch=[
            models.Prefetch(query=q, using="dense", limit=10),
            models.Prefetch(
                query=models.SparseVector(indices=[1, 5], values=[1.0, 0.5]),
                using="sparse",
                limit=10,
            ),
        ],
        query=models.FusionQuery(fusion=models.Fusion.RRF),
        limit=4,
    ).points
    assert len(fused) == 4
