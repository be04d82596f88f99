"""The gRPC write path's encoder (``sinks/proto``) against qdrant-client's own conversion: the
request bytes it writes, parsed with qdrant-client's generated classes, equal the
``UpsertPoints`` qdrant-client builds for the same points (``ClientStore.upsert``'s path:
points as lists, uint8 codes applied, ``RestToGrpc``), floats bit for bit."""

from __future__ import annotations

import math
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qdrant_client import grpc
from qdrant_client.conversions.conversion import RestToGrpc

from poolq.sinks.points import PointRecord, SparseValues, point_id, to_point_struct
from poolq.sinks.proto import upsert as enc
from poolq.sinks.proto.protobuf_format import varint, varints
from poolq.sinks.store import uint8_codec
from poolq.worker.pooling.token_pooling import pool_tokens


def reference(
    collection: str, points: list[PointRecord], uint8: frozenset[str]
) -> grpc.UpsertPoints:
    """What qdrant-client sends for ``ClientStore.upsert`` of these points (arrays reach the
    uint8 code map as arrays: a uint8 array is codes already)."""
    structs = [to_point_struct(p, arrays_ok=True) for p in points]
    structs = uint8_codec.encode_points(structs, uint8, arrays_ok=False)
    return grpc.UpsertPoints(
        collection_name=collection,
        wait=True,
        points=[RestToGrpc.convert_point_struct(s) for s in structs],
    )


def parsed(data: bytes) -> grpc.UpsertPoints:
    msg = grpc.UpsertPoints()
    msg.ParseFromString(data)
    return msg


def float_bits(msg: grpc.UpsertPoints) -> list[bytes]:
    """Every float of every vector as raw bytes (``==`` on messages compares floats as
    numbers, where -0.0 equals 0.0 and NaN nothing)."""
    out = []
    for p in msg.points:
        for name in sorted(p.vectors.vectors.vectors):
            v = p.vectors.vectors.vectors[name]
            rows = (
                [v.dense.data]
                if v.HasField("dense")
                else [v.sparse.values]
                if v.HasField("sparse")
                else [r.data for r in v.multi_dense.vectors]
            )
            out += [name.encode() + np.asarray(r, dtype=np.float32).tobytes() for r in rows]
    return out


# -- strategies ------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, width=64)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
float32s = st.floats(width=32, allow_nan=False, allow_infinity=False)


@st.composite
def matrices(draw, max_rows=12, max_dim=16, elements=float32s):
    n = draw(st.integers(1, max_rows))
    d = draw(st.integers(1, max_dim))
    values = draw(st.lists(elements, min_size=n * d, max_size=n * d))
    return np.asarray(values, dtype=np.float32).reshape(n, d)


@st.composite
def sparse_values(draw):
    idx = draw(st.lists(st.integers(0, 2**32 - 1), unique=True, max_size=20))
    vals = draw(st.lists(float32s, min_size=len(idx), max_size=len(idx)))
    return SparseValues(idx, vals)


@st.composite
def records(draw):
    vectors = {}
    if draw(st.booleans()):
        d = draw(st.integers(1, 32))
        vectors["dense"] = np.asarray(
            draw(st.lists(float32s, min_size=d, max_size=d)), dtype=np.float32
        )
    if draw(st.booleans()):
        vectors["sparse"] = draw(sparse_values())
    if draw(st.booleans()):
        vectors["colbert"] = draw(matrices())
    if draw(st.booleans()):  # a uint8-stored multi-vector, given as floats or as codes
        m = draw(matrices(elements=st.floats(-1e3, 1e3, width=32)))
        vectors["colbert_u8"] = m if draw(st.booleans()) else uint8_codec.encode(m)
    payload = draw(st.dictionaries(st.text(max_size=12), json_values, max_size=6))
    payload["metadata"] = draw(st.dictionaries(st.text(max_size=8), json_values, max_size=4))
    pid = str(uuid.UUID(int=draw(st.integers(0, 2**128 - 1))))
    return PointRecord(pid, vectors, payload)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records(), min_size=1, max_size=4), st.text(min_size=1, max_size=10))
def test_the_request_equals_qdrant_clients(points, collection):
    uint8 = frozenset({"colbert_u8"})
    mine = parsed(enc.upsert_request(collection, points, uint8))
    theirs = reference(collection, points, uint8)
    assert mine == theirs
    assert float_bits(mine) == float_bits(theirs)


def test_a_real_point_every_vector_kind():
    """A chunk's point as the worker builds it: dense, SPLADE sparse, ColBERT float32, the
    same pooled (``pool_factor = 2``) and as uint8 codes; a payload with unicode and nested
    metadata. Checked message and bytes of every float."""
    rng = np.random.default_rng(7)
    tokens = rng.standard_normal((92, 128)).astype(np.float32)
    tokens /= np.linalg.norm(tokens, axis=1, keepdims=True)
    pooled = pool_tokens(tokens, 2)
    assert 0 < pooled.shape[0] < tokens.shape[0]
    dense = rng.standard_normal(384).astype(np.float32)
    dense[:3] = [-0.0, 1e-45, np.finfo(np.float32).max]  # sign of zero, subnormal, largest
    idx = rng.choice(30522, 120, replace=False).tolist()
    sparse = SparseValues(idx, rng.random(120).astype(np.float32).tolist())
    payload = {
        "doc_id": "dök-1 🚀",
        "chunk_index": 3,
        "text": "Ünïcödé text — 日本語 \u0000 nul",
        "metadata": {"tags": ["a", "ß"], "nested": {"x": [1, 2.5, None, True]}, "n": -(2**63)},
        "score": 0.1,
        "profile_version": None,
    }
    vectors = {"dense": dense, "sparse": sparse, "colbert": tokens, "pooled": pooled,
               "colbert_u8": uint8_codec.encode(tokens)}  # fmt: skip
    points = [PointRecord(point_id("d", i), vectors, payload) for i in range(3)]
    uint8 = frozenset({"colbert_u8"})
    mine = parsed(enc.upsert_request("docs", points, uint8))
    theirs = reference("docs", points, uint8)
    assert mine == theirs
    assert float_bits(mine) == float_bits(theirs)
    assert math.copysign(1.0, mine.points[0].vectors.vectors.vectors["dense"].dense.data[0]) < 0


def test_lists_and_float64_arrays_round_like_protobuf():
    """Vectors given as lists of Python floats or float64 arrays round to float32 as protobuf
    rounds them (to nearest)."""
    values = [0.1, 1 / 3, 1e-40, -2.5e38]
    p = PointRecord(point_id("d", 0), {"a": values, "b": np.asarray([values, values])}, {})
    assert parsed(enc.upsert_request("c", [p])) == reference("c", [p], frozenset())


@pytest.mark.parametrize(
    "values", [[0], [1, 127, 128, 16383, 16384, 2**21, 2**28 - 1, 2**28, 2**32 - 1]]
)
def test_varints_match_protobuf(values):
    msg = grpc.SparseVector(indices=values)
    assert msg.SerializeToString() == b"\x12" + bytes([len(varints(np.asarray(values)))]) + varints(
        np.asarray(values)
    )


def test_bad_values_are_refused_naming_them():
    with pytest.raises(ValueError, match="uint32"):
        varints(np.asarray([2**32]))
    with pytest.raises(ValueError, match="'colbert'"):
        empty = {"colbert": np.zeros((0, 4), np.float32)}  # an empty multi-vector
        enc.upsert_request("c", [PointRecord(point_id("d", 0), empty, {})])
    with pytest.raises(ValueError, match="64 bits"):
        enc.upsert_request("c", [PointRecord(point_id("d", 0), {}, {"n": 2**63})])


@pytest.mark.parametrize(
    "n", [0, 1, 127, 128, 300, 16383, 16384, 2**21 - 1, 2**21, 2**28, 2**35 + 7, 2**64 - 1]
)
def test_varint_matches_protobuf_at_every_width(n):
    assert grpc.PointId(num=n).SerializeToString() == b"\x08" + varint(n)


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(0, 2**40))
def test_point_ids_are_the_uuid5_of_the_json_pair(doc_id, index):
    """``point_id`` computes the UUID5 itself: the same ids as ever (re-ingestion must find
    the points it wrote before)."""
    import json

    from poolq.sinks.points import POINT_ID_NAMESPACE

    assert point_id(doc_id, index) == str(
        uuid.uuid5(POINT_ID_NAMESPACE, json.dumps([doc_id, index]))
    )
