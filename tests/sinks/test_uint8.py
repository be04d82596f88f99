"""``multivector_datatype = "uint8"``: the store gives Qdrant offset codes (a float would be cast
with Rust's ``as u8``: truncated, negatives to 0), compares them by Euclid distance so that
MaxSim's ranking survives, codes the query the same way and reports scores on the cosine scale.
Checked against MaxSim computed in float64 from the float32 originals (``tests/support/maxsim.py``), on
Qdrant Edge and on qdrant-client's local mode (the server backend's code path; no Qdrant server
runs here)."""

import json

import numpy as np
import pytest
from qdrant_client import models

from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.collections import check_collection
from poolq.sinks.points import PointRecord, point_id, to_point_struct
from poolq.sinks.schema import CollectionSchema, SchemaMismatchError, VectorSpec
from poolq.sinks.store import uint8_codec
from poolq.sinks.store.edge import EdgeStore
from poolq.sinks.transfer import export_points, import_points
from tests.sinks.conftest import local_oracle
from tests.support.maxsim import maxsim

DIM = 128


def schema(datatype="uint8"):
    return CollectionSchema(
        "c",
        (VectorSpec("dense", "dense", 8, "m"), VectorSpec("colbert", "multi", DIM, "m")),
        CollectionSettings(multivector_datatype=datatype),
    )


def corpus(n=150, seed=0):
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((int(rng.integers(4, 40)), DIM)).astype(np.float32) for _ in range(n)
    ]


def fill(store, docs, datatype="uint8"):
    store.create_collection("c", schema(datatype))
    rng = np.random.default_rng(1)
    store.upsert(
        "c",
        [
            to_point_struct(
                PointRecord(point_id("d", i), {"dense": rng.standard_normal(8), "colbert": d}, {}),
                arrays_ok=store.accepts_arrays,
            )
            for i, d in enumerate(docs)
        ],
    )


def test_codes_round_trip_and_stay_in_range():
    rng = np.random.default_rng(2)
    for dim in (4, 16, 128, 384):  # few dimensions: a decoded row's length is furthest from 1
        x = rng.standard_normal((20000, dim)).astype(np.float32)
        codes = uint8_codec.encode(x)
        assert codes.dtype == np.uint8 and codes.min() >= 1 and codes.max() <= 255
        unit = x / np.linalg.norm(x, axis=1, keepdims=True)
        assert np.abs(uint8_codec.decode(codes) - unit).max() <= 1 / 254 + 1e-6
        assert np.array_equal(uint8_codec.encode(uint8_codec.decode(codes)), codes)
        # JSON lines carry the decoded floats: through JSON and back, the same codes
        again = np.asarray(json.loads(json.dumps(uint8_codec.decode(codes[:200]).tolist())))
        assert np.array_equal(uint8_codec.encode(again), codes[:200])
    assert uint8_codec.encode(np.zeros((1, 4)))[0].tolist() == [128] * 4  # zero is exact


@pytest.mark.parametrize("backend", ["edge", "local"])
def test_uint8_keeps_maxsim_ranking_and_scale(tmp_path, backend):
    store = EdgeStore(tmp_path / "e") if backend == "edge" else local_oracle()
    try:
        docs = corpus()
        fill(store, docs)
        params = store.collection_params("c").vectors["colbert"]
        if backend == "edge":  # local mode keeps its own parameters; Edge stores uint8
            assert params.datatype == models.Datatype.UINT8
            assert params.distance == models.Distance.EUCLID
        rng = np.random.default_rng(3)
        for _ in range(6):
            q = rng.standard_normal((8, DIM)).astype(np.float32)
            want = {point_id("d", i): maxsim(q, d) for i, d in enumerate(docs)}
            got = store.query(
                {"collection_name": "c", "query": q.tolist(), "using": "colbert", "limit": 150}
            )
            score = {p.id: p.score for p in got}
            assert score.keys() == want.keys()
            # on the cosine scale, within the codes' rounding (8 rows, 1/254 a component)
            assert max(abs(score[k] - want[k]) for k in want) < 0.04
            # every pair the float scores tell apart by more than twice that keeps its order
            ranked = sorted(want, key=lambda k: -want[k])
            for i, a in enumerate(ranked):
                for b in ranked[i + 1 :]:
                    if want[a] - want[b] > 0.08:
                        assert score[a] > score[b], (want[a], want[b], score[a], score[b])
        # a threshold on the cosine scale keeps the points at or above it
        q = rng.standard_normal((8, DIM)).astype(np.float32)
        req = {"collection_name": "c", "query": q.tolist(), "using": "colbert", "limit": 150}
        everyone = store.query(req)
        cut = everyone[20].score
        kept = store.query(req | {"score_threshold": cut})
        assert 20 <= len(kept) <= 22 and min(p.score for p in kept) >= cut - 1e-4
    finally:
        store.close()


def test_a_float_query_would_be_mangled_without_the_codes(tmp_path, edge):
    """What the store protects against: Qdrant casts floats to uint8 by truncation."""
    docs = corpus(60)
    fill(edge, docs)
    stored = edge.retrieve("c", [point_id("d", 0)], with_vectors=True)[0].vector["colbert"]
    unit = docs[0] / np.linalg.norm(docs[0], axis=1, keepdims=True)
    np.testing.assert_allclose(stored, unit, atol=1 / 254 + 1e-6)  # decoded back to floats
    with edge._using("c") as sh:  # the raw stored codes, as Qdrant holds them
        raw = sh.shard.retrieve([point_id("d", 0)], False, True)[0].vector["colbert"]
    assert np.array_equal(np.asarray(raw, np.uint8), uint8_codec.encode(docs[0]))


def test_uint8_moves_exactly_through_json_lines(tmp_path, edge):
    fill(edge, corpus(40))
    lines: list[str] = []
    export_points(edge, "c", lines.append)
    dest = EdgeStore(tmp_path / "dest")
    try:
        import_points(dest, "c", lines, settings=schema().settings)
        again: list[str] = []
        export_points(dest, "c", again.append)
    finally:
        dest.close()
    assert sorted(again) == sorted(lines)


def test_a_uint8_collection_is_not_a_float32_one(edge):
    fill(edge, corpus(3))
    with pytest.raises(SchemaMismatchError) as e:
        check_collection(edge, schema("float32"))
    assert (
        "vector 'colbert': datatype float32 expected ([collection] multivector_datatype), "
        "collection has uint8"
    ) in str(e.value)
    assert "distance" not in str(e.value)
    check_collection(edge, schema("uint8"))  # and its own settings match
