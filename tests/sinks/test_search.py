"""Search requests against Qdrant Edge, checked with hand-written formulas (cosine, sparse dot
product, reciprocal rank fusion, MaxSim, filters as Python predicates) and against qdrant-client's
local mode as an independent oracle: the same points and the same request rank the same."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qdrant_client import models

from poolq.sinks.collections import ensure_collection
from poolq.sinks.points import PointRecord, SparseValues, point_id, to_point_struct
from poolq.sinks.qdrant_filters import parse_filters
from poolq.sinks.query import build_query, resolve_mode
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.search import search_points
from poolq.sinks.store.edge import EdgeStore
from poolq.wire.payload import CHUNK_INDEX, DOC_ID, METADATA, TEXT
from poolq.wire.search_results import Hit, SearchError, SearchRequest
from tests.sinks.conftest import local_oracle
from tests.support.maxsim import maxsim, maxsim_many

DIM, N = 8, 60
SCHEMA = CollectionSchema(
    "t",
    (
        VectorSpec("dense", "dense", DIM, "m"),
        VectorSpec("colbert", "multi", DIM, "m"),
        VectorSpec("sparse", "sparse", None, "s"),
    ),
)


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """The same points in Qdrant Edge and in the local-mode oracle."""
    rng = np.random.default_rng(7)
    edge, oracle = EdgeStore(tmp_path_factory.mktemp("edge")), local_oracle()
    for s in (edge, oracle):
        ensure_collection(s, SCHEMA)
    rows = []
    for i in range(N):
        dense = rng.normal(size=DIM).astype(np.float32)
        multi = rng.normal(size=(int(rng.integers(1, 6)), DIM)).astype(np.float32)
        idx = sorted(rng.choice(50, size=int(rng.integers(1, 8)), replace=False).tolist())
        sparse = SparseValues(idx, rng.uniform(0.1, 2.0, size=len(idx)).round(3).tolist())
        meta = {"n": i, "lang": ["en", "de", "fr"][i % 3], "flag": i % 4 == 0, "w": i / 7}
        payload = {DOC_ID: f"d{i}", CHUNK_INDEX: 0, TEXT: f"t{i}", METADATA: meta}
        rec = PointRecord(
            point_id(f"d{i}", 0), {"dense": dense, "colbert": multi, "sparse": sparse}, payload
        )
        rows.append((rec, dense, multi, sparse, meta))
        for s in (edge, oracle):
            s.upsert("t", [to_point_struct(rec, arrays_ok=s.accepts_arrays)])
    yield edge, oracle, rows
    edge.close()
    oracle.close()


@pytest.fixture(scope="module")
def store(stores):
    edge, _, rows = stores
    return edge, rows


def _query(seed=3):
    rng = np.random.default_rng(seed)
    return {
        "dense": rng.normal(size=DIM).astype(np.float32),
        "colbert": rng.normal(size=(4, DIM)).astype(np.float32),
        "sparse": SparseValues([1, 5, 9, 17, 33], [1.0, 0.7, 0.4, 1.3, 0.2]),
    }


def _sparse_dot(q, d):
    qd = dict(zip(q.indices, q.values, strict=True))
    return sum(qd.get(i, 0.0) * v for i, v in zip(d.indices, d.values, strict=True))


def _ranked(scores, limit):
    return [i for _, i in sorted(((-s, i) for i, s in scores.items() if s is not None))][:limit]


def test_dense_is_cosine_by_hand(store):
    client, rows = store
    q = _query()
    hits = search_points(client, SCHEMA, SearchRequest("t", "dense", 10), q)
    by_hand = {f"d{i}": float(_unit(q["dense"]) @ _unit(r[1])) for i, r in enumerate(rows)}
    assert [h.doc_id for h in hits] == _ranked(by_hand, 10)
    for h in hits:
        assert h.score == pytest.approx(by_hand[h.doc_id], abs=1e-5)


def test_sparse_is_dot_product_by_hand(store):
    client, rows = store
    q = _query()
    hits = search_points(client, SCHEMA, SearchRequest("t", "sparse", 10), q)
    by_hand = {f"d{i}": _sparse_dot(q["sparse"], r[3]) for i, r in enumerate(rows)}
    matching = {k: v for k, v in by_hand.items() if v > 0}
    assert {h.doc_id for h in hits} <= set(matching)
    for h in hits:
        assert h.score == pytest.approx(by_hand[h.doc_id], abs=1e-5)
    assert [h.score for h in hits] == pytest.approx(sorted(matching.values(), reverse=True)[:10])


def test_hybrid_rrf_is_reciprocal_rank_fusion_by_hand(store):
    """Qdrant's RRF: score = sum over the prefetch lists of 1 / (k + rank), rank from 0, k = 2."""
    client, rows = store
    q = _query(11)
    req = SearchRequest("t", "hybrid", 10, candidates=20)
    hits = search_points(client, SCHEMA, req, q)
    dense = _ranked(
        {f"d{i}": float(_unit(q["dense"]) @ _unit(r[1])) for i, r in enumerate(rows)}, 20
    )
    sp = {f"d{i}": _sparse_dot(q["sparse"], r[3]) for i, r in enumerate(rows)}
    sparse = _ranked({k: v for k, v in sp.items() if v > 0}, 20)
    fused: dict[str, float] = {}
    for ranking in (dense, sparse):
        for rank, doc in enumerate(ranking):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (2 + rank)
    for h in hits:
        assert h.score == pytest.approx(fused[h.doc_id], abs=1e-6)
    assert [h.score for h in hits] == pytest.approx(sorted(fused.values(), reverse=True)[:10])


def test_rerank_is_maxsim_over_the_fused_candidates(store):
    client, rows = store
    q = _query(5)
    cands = search_points(client, SCHEMA, SearchRequest("t", "hybrid", 15, candidates=15), q)
    hits = search_points(client, SCHEMA, SearchRequest("t", "rerank", 5, candidates=15), q)
    multi = {f"d{i}": r[2] for i, r in enumerate(rows)}
    by_hand = {h.doc_id: maxsim(q["colbert"], multi[h.doc_id]) for h in cands}
    assert [h.doc_id for h in hits] == _ranked(by_hand, 5)
    for h in hits:
        assert h.score == pytest.approx(by_hand[h.doc_id], abs=1e-4)


def test_dbsf_fusion_runs_and_differs_in_scale(store):
    client, _ = store
    q = _query(5)
    rrf = search_points(client, SCHEMA, SearchRequest("t", "hybrid", 5), q)
    dbsf = search_points(client, SCHEMA, SearchRequest("t", "hybrid", 5, fusion="dbsf"), q)
    assert len(dbsf) == 5 and [h.score for h in dbsf] != [h.score for h in rrf]


FILTERS = [
    (["lang=en"], lambda m: m["lang"] == "en"),
    (["lang!=en"], lambda m: m["lang"] != "en"),
    (["n>=10", "n<20"], lambda m: 10 <= m["n"] < 20),
    (["n>50"], lambda m: m["n"] > 50),
    (["n<=3"], lambda m: m["n"] <= 3),
    (["flag=true"], lambda m: m["flag"]),
    (["n=7"], lambda m: m["n"] == 7),
    (["w=1.0"], lambda m: m["w"] == 1.0),
    (["metadata.lang=fr", "flag=false"], lambda m: m["lang"] == "fr" and not m["flag"]),
]


@pytest.mark.parametrize(("exprs", "pred"), FILTERS, ids=[" ".join(f[0]) for f in FILTERS])
@pytest.mark.parametrize("mode", ["dense", "sparse", "hybrid", "rerank"])
def test_filters_equal_python_predicates(store, exprs, pred, mode):
    client, rows = store
    q = _query(2)
    hits = search_points(client, SCHEMA, SearchRequest("t", mode, N, tuple(exprs), candidates=N), q)
    allowed = {f"d{i}" for i, r in enumerate(rows) if pred(r[4])}
    assert {h.doc_id for h in hits} <= allowed
    if mode in ("dense", "hybrid", "rerank"):  # dense reaches every point
        assert {h.doc_id for h in hits} == allowed


def test_top_level_fields_and_quoted_strings():
    f = parse_filters(["doc_id=d1", "chunk_index>=2", "code='007'"])
    assert f is not None and f.must is not None
    keys = [c.key for c in f.must]  # type: ignore[union-attr]
    assert keys == [DOC_ID, CHUNK_INDEX, f"{METADATA}.code"]
    assert f.must[2].match == models.MatchValue(value="007")  # type: ignore[union-attr]
    assert parse_filters([]) is None


@pytest.mark.parametrize(
    ("expr", "msg"),
    [
        ("lang", "expected KEY=VALUE"),
        ("n>abc", "a range needs a number"),
        ("n>=nan", "a range needs a number"),
        ("lang=", "expected a value"),
        ("=x", "expected KEY=VALUE"),
    ],
)
def test_bad_filters_name_the_expression(expr, msg):
    with pytest.raises(SearchError, match=msg) as e:
        SearchRequest("t", filters=(expr,))
    assert repr(expr) in str(e.value)


@given(st.text(max_size=30))
@settings(max_examples=200, deadline=None)
def test_any_filter_text_parses_or_raises_search_error(expr):
    """Never a crash (pydantic, TypeError, ...): a Filter, or a SearchError naming the text."""
    try:
        assert isinstance(parse_filters([expr]), models.Filter)
    except SearchError as e:
        assert repr(expr) in str(e)


def test_request_validation():
    with pytest.raises(SearchError, match="limit"):
        SearchRequest("t", limit=0)
    with pytest.raises(SearchError, match="mode"):
        SearchRequest("t", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(SearchError, match="fusion"):
        SearchRequest("t", fusion="max")  # type: ignore[arg-type]
    with pytest.raises(SearchError, match="score_threshold"):
        SearchRequest("t", score_threshold=float("nan"))
    with pytest.raises(SearchError, match="unknown keys"):
        SearchRequest.from_dict({"collection": "t", "evil": 1})
    r = SearchRequest("t", "hybrid", 7, ("a=1",), 0.5, "dbsf", 30)
    assert SearchRequest.from_dict(r.to_dict()) == r
    h = Hit("id", 1.5, "d", 0, "x", {"a": 1})
    assert Hit.from_dict(h.to_dict()) == h


def test_mode_resolution():
    dense_only = CollectionSchema("c", (VectorSpec("d", "dense", 4, "m"),))
    assert resolve_mode(SCHEMA, None) == "rerank"
    assert resolve_mode(dense_only, None) == "dense"
    with pytest.raises(SearchError, match=r"needs a sparse vector.*has d \(dense\)"):
        resolve_mode(dense_only, "hybrid")
    no_multi = CollectionSchema("c", SCHEMA.vectors[::2])
    assert resolve_mode(no_multi, None) == "hybrid"
    with pytest.raises(SearchError, match="a multi-vector"):
        resolve_mode(no_multi, "rerank")


def test_filter_applies_inside_every_prefetch():
    kw = build_query(SCHEMA, SearchRequest("t", "rerank", 5, ("lang=en",)), _query())
    outer = kw["prefetch"]
    assert outer.filter == kw["query_filter"]
    assert all(p.filter == kw["query_filter"] for p in outer.prefetch)
    with pytest.raises(SearchError, match="were not given"):
        build_query(SCHEMA, SearchRequest("t", "rerank"), {"dense": [0.0] * DIM})


def _same_ranking(ours, theirs):
    """Equal scores in the same order; points of equal score (RRF ties) in either order, unless
    the limit cuts through their group."""
    assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], abs=1e-4)
    groups: dict[float, tuple[set, set]] = {}
    for h, o in zip(ours, theirs, strict=True):
        g = groups.setdefault(round(h.score, 4), (set(), set()))
        g[0].add(h.id)
        g[1].add(o.id)
    last = round(ours[-1].score, 4) if ours else None
    for score, (a, b) in groups.items():
        if score != last:
            assert a == b, score


ORACLE_CASES = [
    (mode, filters, fusion)
    for mode in ("dense", "sparse", "hybrid", "rerank")
    for filters in [(), ("lang=en",), ("n>=10", "n<40", "flag=false"), ("w=1.0",)]
    for fusion in (["rrf", "dbsf"] if mode in ("hybrid", "rerank") else ["rrf"])
]


@pytest.mark.parametrize(("mode", "filters", "fusion"), ORACLE_CASES)
def test_edge_ranks_like_the_local_mode_oracle(stores, mode, filters, fusion):
    """The one request built by sinks/query.py, run by Qdrant Edge through its adapter and by
    qdrant-client's local mode unchanged: same points, same scores, same order."""
    edge, oracle, _ = stores
    q = _query(9)
    req = SearchRequest("t", mode, 8, filters, fusion=fusion, candidates=25)
    ours = search_points(edge, SCHEMA, req, q)
    theirs = search_points(oracle, SCHEMA, req, q)
    assert ours, "nothing to compare"
    _same_ranking(ours, theirs)
    cut = (ours[2].score + ours[3].score) / 2 if len(ours) > 3 else None
    if cut is not None and ours[2].score != ours[3].score:
        kept = SearchRequest("t", mode, 8, filters, cut, fusion=fusion, candidates=25)
        assert [h.id for h in search_points(edge, SCHEMA, kept, q)] == [h.id for h in ours[:3]]


def test_maxsim_many_equals_maxsim_one_by_one():
    rng = np.random.default_rng(1)
    q = rng.normal(size=(5, 6))
    docs = [rng.normal(size=(int(n), 6)).astype(np.float32) for n in rng.integers(1, 9, size=12)]
    assert maxsim_many(q, docs) == pytest.approx([maxsim(q, d) for d in docs], abs=1e-5)
