"""Search results per document (``group_by="doc_id"``) on Qdrant Edge, which has no grouping
query of its own (``sinks/store/edge_groups.py`` groups there): checked against documents'
best chunks computed by hand, against the chunk-level search of the same store, and against
qdrant-client's local mode running ``query_points_groups`` (the server's request, unchanged).

The corpus has one long document whose many chunks all lie close to the query: chunk-level
hits are all its chunks, per-document hits are distinct documents."""

import numpy as np
import pytest
from qdrant_client import models

from poolq.sinks.collections import ensure_collection
from poolq.sinks.points import PointRecord, SparseValues, point_id, to_point_struct
from poolq.sinks.query import build_group_query, build_query
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.search import SearchRequest, search_points
from poolq.sinks.store import edge_groups
from poolq.sinks.store.edge import EdgeStore
from poolq.wire.payload import CHUNK_INDEX, DOC_ID, METADATA, TEXT
from poolq.wire.search_results import SearchError
from tests.sinks.conftest import local_oracle
from tests.support.maxsim import maxsim

DIM = 8
LONG_CHUNKS = 30  # chunks of the long document, all near the query
SCHEMA = CollectionSchema(
    "g",
    (
        VectorSpec("dense", "dense", DIM, "m"),
        VectorSpec("colbert", "multi", DIM, "m"),
        VectorSpec("sparse", "sparse", None, "s"),
    ),
)
MODES = ["dense", "sparse", "hybrid", "rerank"]


def _query():
    rng = np.random.default_rng(5)
    return {
        "dense": rng.normal(size=DIM).astype(np.float32),
        "colbert": rng.normal(size=(3, DIM)).astype(np.float32),
        "sparse": SparseValues([1, 4, 7, 11], [1.0, 0.8, 0.6, 0.4]),
    }


def _corpus():
    """(doc_id, chunk_index, dense, multi, sparse): 25 short documents of 1-4 chunks, and one
    long document whose chunks are the query itself, slightly perturbed."""
    rng = np.random.default_rng(11)
    q = _query()
    rows = []
    for d in range(25):
        for c in range(int(rng.integers(1, 5))):
            idx = sorted(rng.choice(16, size=int(rng.integers(1, 6)), replace=False).tolist())
            rows.append(
                (
                    f"d{d}",
                    c,
                    rng.normal(size=DIM).astype(np.float32),
                    rng.normal(size=(int(rng.integers(1, 4)), DIM)).astype(np.float32),
                    SparseValues(idx, rng.uniform(0.1, 1.0, size=len(idx)).round(3).tolist()),
                )
            )
    for c in range(LONG_CHUNKS):
        noise = 0.05 * rng.normal(size=DIM).astype(np.float32)
        rows.append(
            (
                "long",
                c,
                q["dense"] + noise,
                q["colbert"] + 0.05 * rng.normal(size=(3, DIM)).astype(np.float32),
                SparseValues([1, 4, 7, 11], [2.0 + c / 100, 1.5, 1.0, 0.5]),
            )
        )
    return rows


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    edge, oracle = EdgeStore(tmp_path_factory.mktemp("edge")), local_oracle()
    rows = _corpus()
    for s in (edge, oracle):
        ensure_collection(s, SCHEMA)
        points = [
            to_point_struct(
                PointRecord(
                    point_id(doc, c),
                    {"dense": dense, "colbert": multi, "sparse": sparse},
                    {DOC_ID: doc, CHUNK_INDEX: c, TEXT: f"{doc}/{c}", METADATA: {"c": c}},
                ),
                arrays_ok=s.accepts_arrays,
            )
            for doc, c, dense, multi, sparse in rows
        ]
        s.upsert("g", points)
    yield edge, oracle, rows
    edge.close()
    oracle.close()


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _by_hand(rows, q, mode):
    """Each chunk's score by formula: {(doc, chunk): score} (dense: cosine; sparse: dot
    product, matching chunks only; rerank: MaxSim)."""
    out = {}
    for doc, c, dense, multi, sparse in rows:
        if mode == "dense":
            out[doc, c] = float(_unit(q["dense"]) @ _unit(dense))
        elif mode == "sparse":
            qd = dict(zip(q["sparse"].indices, q["sparse"].values, strict=True))
            s = sum(qd.get(i, 0.0) * v for i, v in zip(sparse.indices, sparse.values, strict=True))
            if s > 0:
                out[doc, c] = s
        else:
            out[doc, c] = maxsim(q["colbert"], multi)
    return out


@pytest.mark.parametrize("mode", ["dense", "sparse"])
def test_each_document_once_scored_by_its_best_chunk_by_hand(stores, mode, monkeypatch):
    edge, _, rows = stores
    scores = _by_hand(rows, _query(), mode)
    best: dict[str, float] = {}
    for (doc, _), s in scores.items():
        best[doc] = max(best.get(doc, -np.inf), s)
    ranked = sorted(best, key=lambda d: -best[d])[:6]
    asked = []
    query = edge.query
    monkeypatch.setattr(edge, "query", lambda kw: asked.append(kw["limit"]) or query(kw))
    hits = search_points(edge, SCHEMA, SearchRequest("g", mode, 6, group_by="doc_id"), _query())
    assert [h.doc_id for h in hits] == ranked
    assert len(asked) > 1  # the long document filled the first run
    assert len(asked) > 2  # the last run filled the groups
    for h in hits:
        assert h.score == pytest.approx(best[h.doc_id], abs=1e-4)
        assert h.score == pytest.approx(scores[h.doc_id, h.chunk_index], abs=1e-4)
        # the document's next best chunks, best first, within the group size
        theirs = sorted(((s, c) for (d, c), s in scores.items() if d == h.doc_id), reverse=True)
        assert [c.chunk_index for c in h.chunks] == [c for _, c in theirs[1:3]]
        for c in h.chunks:
            assert c.score == pytest.approx(scores[h.doc_id, c.chunk_index], abs=1e-4)
            assert c.text == f"{h.doc_id}/{c.chunk_index}"
    assert any(h.chunks for h in hits[1:])  # (the check is not empty)


@pytest.mark.parametrize("mode", MODES)
def test_one_long_document_no_longer_fills_the_hits(stores, mode):
    edge, _, _ = stores
    q = _query()
    chunks = search_points(edge, SCHEMA, SearchRequest("g", mode, 5), q)
    assert [h.doc_id for h in chunks] == ["long"] * 5  # the corpus does what it should
    assert all(h.chunks is None for h in chunks)
    docs = search_points(edge, SCHEMA, SearchRequest("g", mode, 5, group_by="doc_id"), q)
    assert len(docs) == 5
    assert docs[0].doc_id == "long"
    assert len({h.doc_id for h in docs}) == 5
    # its best chunk and next two are the chunk-level list's first three (hybrid: fused on
    # deeper lists, since the first run found one document, so RRF scores differ)
    ours = [(docs[0].id, docs[0].score)] + [(c.id, c.score) for c in docs[0].chunks]
    if mode != "hybrid":
        assert ours == [(h.id, pytest.approx(h.score)) for h in chunks[:3]]
    assert len(ours) == 3
    assert [h.score for h in docs] == sorted((h.score for h in docs), reverse=True)
    for h in docs:
        assert len(h.chunks) <= 2
        assert all(c.score <= h.score for c in h.chunks)
        assert [c.score for c in h.chunks] == sorted((c.score for c in h.chunks), reverse=True)


@pytest.mark.parametrize("mode", MODES)
def test_group_size_bounds_the_listed_chunks(stores, mode):
    edge, _, _ = stores
    for size in (1, 4):
        req = SearchRequest("g", mode, 4, group_by="doc_id", group_size=size)
        hits = search_points(edge, SCHEMA, req, _query())
        assert hits[0].doc_id == "long" and len(hits[0].chunks) == size - 1
        assert all(len(h.chunks) <= size - 1 for h in hits)


@pytest.mark.parametrize("mode", ["hybrid", "rerank"])
def test_fused_modes_group_the_chunk_list_of_the_same_depth(stores, mode):
    """When the first run finds enough documents, the groups are the chunk-level list of
    ``limit * group_size`` points, grouped: each document's first chunk in it and its next
    (rerank: and more chunks of the document searched for, scored by MaxSim: see below)."""
    edge, _, _ = stores
    q = _query()
    req = SearchRequest("g", mode, 3, ("c<2",), group_by="doc_id", candidates=80)
    docs = search_points(edge, SCHEMA, req, q)
    flat = search_points(edge, SCHEMA, SearchRequest("g", mode, 9, ("c<2",), candidates=80), q)
    firsts = list(dict.fromkeys(h.doc_id for h in flat))
    assert len(firsts) >= 3  # (else the deeper rounds would run)
    assert [h.doc_id for h in docs] == firsts[:3]
    for h in docs:
        mine = [x for x in flat if x.doc_id == h.doc_id]
        # (RRF ties, such as the long document's first two chunks, come in either order)
        ours = [(h.id, h.score)] + [(c.id, c.score) for c in h.chunks]
        if mode == "hybrid":  # (a fused list is not filled)
            assert [s for _, s in ours] == pytest.approx([x.score for x in mine[:3]])
            tie = len(mine) > 3 and mine[2].score == mine[3].score
            assert tie or {i for i, _ in ours} == {x.id for x in mine[:3]}
        else:
            assert ours[: len(mine)] == [(x.id, pytest.approx(x.score)) for x in mine[:3]]


def test_rerank_documents_score_by_maxsim_by_hand(stores):
    edge, _, rows = stores
    scores = _by_hand(rows, _query(), "rerank")
    req = SearchRequest("g", "rerank", 5, group_by="doc_id")
    for h in search_points(edge, SCHEMA, req, _query()):
        assert h.score == pytest.approx(scores[h.doc_id, h.chunk_index], abs=1e-3)
        for c in h.chunks:
            assert c.score == pytest.approx(scores[h.doc_id, c.chunk_index], abs=1e-3)


def test_a_shallow_pool_is_deepened_until_enough_documents(stores):
    """Hybrid with 5 candidates per list: the long document's chunks fill both lists, so the
    first run finds one document; deeper runs find the rest."""
    edge, _, _ = stores
    q = _query()
    calls = []

    def run(kw):
        calls.append(kw)
        return edge.query(kw)

    flat = search_points(edge, SCHEMA, SearchRequest("g", "hybrid", 10, candidates=5), q)
    assert {h.doc_id for h in flat} == {"long"}
    req = SearchRequest("g", "hybrid", 4, group_by="doc_id", candidates=5)
    groups = edge_groups.query_groups(run, build_group_query(SCHEMA, req, q))
    assert len(groups) == 4 and len({g.id for g in groups}) == 4
    assert len(calls) > 1
    assert [p.limit for p in calls[1]["prefetch"]] == [10, 10]  # doubled
    assert len(calls) <= edge_groups.MAX_ROUNDS


def test_a_search_with_fewer_documents_than_the_limit_stops(stores):
    edge, _, rows = stores
    calls = []

    def run(kw):
        calls.append(kw)
        return edge.query(kw)

    req = SearchRequest("g", "dense", 100, group_by="doc_id")
    groups = edge_groups.query_groups(run, build_group_query(SCHEMA, req, _query()))
    assert len(groups) == len({r[0] for r in rows})  # every document, once
    assert len(calls) == 1  # all there is came back at once: no deeper run
    req = SearchRequest("g", "hybrid", 100, group_by="doc_id")
    groups = edge_groups.query_groups(run, build_group_query(SCHEMA, req, _query()))
    assert len(groups) == len({r[0] for r in rows})
    assert len(calls) <= 1 + edge_groups.MAX_ROUNDS


@pytest.mark.parametrize("mode", ["dense", "sparse"])
@pytest.mark.parametrize("filters", [(), ("c<2",)])
def test_edge_groups_like_the_local_mode_oracle(stores, mode, filters):
    """The server's request (``query_points_groups``, built by sinks/query.py) run by
    qdrant-client's local mode, against Edge's grouping: same documents, chunks and scores."""
    edge, oracle, _ = stores
    req = SearchRequest("g", mode, 6, filters, group_by="doc_id")
    ours = search_points(edge, SCHEMA, req, _query())
    theirs = search_points(oracle, SCHEMA, req, _query())
    assert [h.doc_id for h in ours] == [h.doc_id for h in theirs]
    assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], abs=1e-4)
    assert [[c.id for c in h.chunks] for h in ours] == [[c.id for c in h.chunks] for h in theirs]


def test_chunks_equal_the_ungrouped_query(stores):
    """``group_by=None``: the chunk-level list of one ``query_points``, as before grouping."""
    edge, _, _ = stores
    q = _query()
    for mode in MODES:
        req = SearchRequest("g", mode, 7)
        hits = search_points(edge, SCHEMA, req, q)
        points = edge.query(build_query(SCHEMA, req, q))
        assert [(h.id, h.score) for h in hits] == [(str(p.id), p.score) for p in points]


def test_the_group_request_is_the_query_plus_grouping():
    q = _query()
    req = SearchRequest("g", "rerank", 4, ("c<3",), group_by="doc_id", group_size=2)
    kw = build_group_query(SCHEMA, req, q)
    plain = build_query(SCHEMA, SearchRequest("g", "rerank", 4, ("c<3",)), q)
    assert kw == plain | {"group_by": "doc_id", "group_size": 2}
    assert isinstance(kw["prefetch"], models.Prefetch)
    with pytest.raises(SearchError, match="group_by"):
        build_group_query(SCHEMA, SearchRequest("g", "dense"), q)
    with pytest.raises(SearchError, match="group_by"):
        SearchRequest("g", group_by="text")
    with pytest.raises(SearchError, match="group_size"):
        SearchRequest("g", group_by="doc_id", group_size=0)


def test_points_without_the_field_belong_to_no_group():
    def sp(i, score, payload):
        return models.ScoredPoint(id=i, version=0, score=score, payload=payload)

    points = [sp(1, 0.9, {}), sp(2, 0.8, {"doc_id": "a"}), sp(3, 0.7, {"doc_id": ["x"]}),
              sp(4, 0.6, {"doc_id": "b"}), sp(5, 0.5, {"doc_id": "a"}), sp(6, 0.4, {"doc_id": 7})]  # fmt: skip
    groups = edge_groups.group_points(points, "doc_id", 3, 2)
    assert [(g.id, [p.id for p in g.hits]) for g in groups] == [("a", [2, 5]), ("b", [4])]


@pytest.mark.parametrize("mode", MODES)
def test_the_servers_request_runs_in_local_mode_for_every_mode(stores, mode):
    """No Qdrant server can run here: the ``query_points_groups`` request a server gets runs
    through qdrant-client's local mode (its own grouping, every point), one hit per document."""
    _, oracle, rows = stores
    req = SearchRequest("g", mode, 5, ("c<5",), group_by="doc_id", candidates=40)
    hits = search_points(oracle, SCHEMA, req, _query())
    assert len(hits) == 5 and len({h.doc_id for h in hits}) == 5
    assert hits[0].doc_id == "long" and len(hits[0].chunks) == 2
    if mode == "rerank":
        scores = _by_hand(rows, _query(), "rerank")
        for h in hits:
            assert h.score == pytest.approx(scores[h.doc_id, h.chunk_index], abs=1e-3)
