"""The store process's wire codec (``sinks/store/process_codec.py``): every value a store call
takes or returns comes back equal, errors keep their class and message, and nothing is pickled
or run on the way."""

import pickle

import msgpack
import numpy as np
import pytest
from qdrant_client import models

from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.schema import CollectionSchema, SchemaMismatchError, VectorSpec
from poolq.sinks.store.edge import CollectionNotFoundError
from poolq.sinks.store.errors import EdgeError
from poolq.sinks.store.process_codec import pack, unpack


def test_arrays_come_back_bit_for_bit_with_dtype_and_shape():
    rng = np.random.default_rng(0)
    for a in (
        rng.standard_normal((7, 128)).astype(np.float32),
        rng.standard_normal(384).astype(np.float16),
        rng.integers(0, 255, (3, 4), dtype=np.uint8),
        np.zeros((0, 8), dtype=np.float32),
        rng.standard_normal((6, 5)).astype(np.float32)[:, ::2],  # not contiguous
    ):
        b = unpack(pack(a))
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(a, b)


def test_upsert_parts_keep_ids_vectors_and_payloads():
    multi = np.arange(12, dtype=np.float32).reshape(3, 4)
    sparse = models.SparseVector.model_construct(indices=[3, 9], values=[0.5, np.float32(1.25)])
    parts = [("id-1", {"colbert": multi, "sparse": sparse}, {"doc_id": "d", "n": 3, "t": [1.5]})]
    ((pid, vectors, payload),) = unpack(pack(["upsert_parts", ["c", parts], {}]))[1][1]
    assert pid == "id-1" and payload == {"doc_id": "d", "n": 3, "t": [1.5]}
    np.testing.assert_array_equal(vectors["colbert"], multi)
    assert vectors["sparse"].indices == [3, 9] and vectors["sparse"].values == [0.5, 1.25]


def test_qdrant_models_and_schemas_round_trip():
    flt = models.Filter(
        must=[models.FieldCondition(key="doc_id", match=models.MatchValue(value="a"))],
        must_not=[models.HasIdCondition(has_id=["x"])],
    )
    selector = models.FilterSelector(filter=flt)
    schema = CollectionSchema(
        "c",
        (VectorSpec("dense", "dense", 4, "m"), VectorSpec("sparse", "sparse", None, "m")),
        CollectionSettings(multivector_datatype="float16"),
    )
    record = models.Record(id="p", payload={"a": 1}, vector={"dense": [0.5, 1.0]})
    assert unpack(pack(selector)) == selector
    assert unpack(pack(schema)) == schema
    assert unpack(pack([record])) == [record]


def test_errors_keep_their_class_and_message():
    for e in (
        KeyError("nope"),
        ValueError("bad value"),
        SchemaMismatchError("vector 'dense': expected size 4, got 8"),
        CollectionNotFoundError("no collection 'c'"),
        EdgeError("edge said no"),
    ):
        back = unpack(pack(e))
        assert type(back) is type(e) and str(back) == str(e)


def test_an_error_of_an_unknown_class_arrives_as_an_edge_error_naming_it():
    class PrivateError(Exception):
        pass

    back = unpack(pack(PrivateError("it broke")))
    assert type(back) is EdgeError and str(back) == "PrivateError: it broke"


def test_a_model_name_outside_qdrant_models_is_refused():
    evil = msgpack.ExtType(2, pack(["os.system", {"command": "true"}]))
    with pytest.raises(TypeError, match=r"unknown model 'os\.system'"):
        unpack(msgpack.packb(evil))


def test_values_it_does_not_carry_are_refused_when_sent_and_pickles_never_load():
    with pytest.raises(TypeError, match=r"cannot send a builtins\.object"):
        pack(object())
    ran = []

    class Planted:  # what a pickle would run on loading: here it must not
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (ran.append, ("ran",))

    with pytest.raises(ValueError):  # msgpack's decode errors are ValueErrors
        unpack(pickle.dumps(("upsert", [Planted()], {})))
    assert ran == []


def test_the_writers_sparse_vectors_travel_as_their_arrays():
    """Pooler to Edge, a sparse vector stays two arrays (uint32, float32): no lists on the way."""
    from poolq.sinks.points import SparseValues

    sent = SparseValues(np.array([3, 17, 40], dtype=np.int32), np.array([0.5, 1.25, 2.0]))
    back = unpack(pack({"splade": sent}))["splade"]
    assert isinstance(back, SparseValues) and back == sent
    assert (back.indices.dtype, back.values.dtype) == (np.uint32, np.float32)
