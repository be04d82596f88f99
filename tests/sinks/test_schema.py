"""Collections and their schema: creation on Qdrant Edge with the ``[collection]`` settings,
matching, every kind of mismatch named (vectors and settings), aliases; and what the server
backend sends (sharding, payload indexes, deferred indexing) recorded around a real client."""

import dataclasses

import pytest
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.collections import ensure_collection
from poolq.sinks.schema import CollectionSchema, SchemaMismatchError, VectorSpec
from poolq.sinks.schema_diff import schema_differences
from poolq.sinks.store.client import ClientStore

COS = models.Distance.COSINE
MAXSIM = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)
VECTORS = (
    VectorSpec("dense", "dense", 384, "minilm"),
    VectorSpec("splade", "sparse", None, "splade-tiny"),
    VectorSpec("colbert", "multi", 128, "colbert-tiny"),
)
SCHEMA = CollectionSchema("docs", VECTORS)
POINT_ID = "00000000-0000-0000-0000-000000000001"


def test_vector_spec_validation():
    with pytest.raises(ValueError, match=r"sparse vector has no size, expected None, got 30"):
        VectorSpec("s", "sparse", 30, "m")
    with pytest.raises(ValueError, match=r"integer size >= 1, got None"):
        VectorSpec("d", "dense", None, "m")
    with pytest.raises(ValueError, match=r"integer size >= 1, got 0"):
        VectorSpec("c", "multi", 0, "m")
    with pytest.raises(ValueError, match=r"kind must be one of"):
        VectorSpec("x", "weird", 3, "m")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"duplicate vector names \['dense'\]"):
        CollectionSchema("c", (VECTORS[0], VECTORS[0]))


def test_create_on_edge_with_the_default_settings_then_match(edge):
    assert ensure_collection(edge, SCHEMA) is True
    params = edge.collection_params("docs")
    dense, colbert = params.vectors["dense"], params.vectors["colbert"]
    assert (dense.size, dense.distance, dense.on_disk, dense.quantization_config) == (
        384,
        COS,
        None,
        None,
    )
    assert colbert.size == 128 and colbert.multivector_config == MAXSIM
    assert colbert.on_disk is True and colbert.hnsw_config.m == 0  # only reranks: no graph
    assert colbert.datatype is None  # float32
    assert params.sparse_vectors["splade"].modifier is None
    assert ensure_collection(edge, SCHEMA) is False
    assert ensure_collection(edge, SCHEMA) is False


def test_the_tuned_settings_reach_the_edge_shard(edge):
    tuned = CollectionSettings(
        multivector_datatype="float16", dense_quantization="int8", dense_on_disk=True
    )
    ensure_collection(edge, dataclasses.replace(SCHEMA, settings=tuned))
    params = edge.collection_params("docs")
    dense, colbert = params.vectors["dense"], params.vectors["colbert"]
    assert colbert.datatype == models.Datatype.FLOAT16
    assert dense.on_disk is True
    assert dense.quantization_config.scalar.type == models.ScalarType.INT8
    assert dense.quantization_config.scalar.always_ram is True
    with pytest.raises(SchemaMismatchError) as err:  # the default settings no longer match
        ensure_collection(edge, SCHEMA)
    msg = str(err.value)
    for part in [
        "vector 'colbert': datatype float32 expected ([collection] multivector_datatype), "
        "collection has float16",
        "vector 'dense': on_disk false expected ([collection] dense_on_disk), collection has true",
        "vector 'dense': quantization none expected ([collection] dense_quantization), "
        "collection has int8",
        "poolq reindex --full",
    ]:
        assert part in msg, msg


def _dense(size=384, distance=COS, **kw):
    return models.VectorParams(size=size, distance=distance, **kw)


def _multi(size=128, **kw):
    kw.setdefault("hnsw_config", models.HnswConfigDiff(m=0))
    kw.setdefault("on_disk", True)
    return models.VectorParams(size=size, distance=COS, multivector_config=MAXSIM, **kw)


GOOD_DENSE = {"dense": _dense(), "colbert": _multi()}
GOOD_SPARSE = {"splade": models.SparseVectorParams()}

MISMATCHES = {
    "dense size": (
        {"dense": _dense(768), "colbert": _multi()},
        GOOD_SPARSE,
        "vector 'dense': size 384 expected, collection has 768",
    ),
    "multi size": (
        {"dense": _dense(), "colbert": _multi(96)},
        GOOD_SPARSE,
        "vector 'colbert': size 128 expected, collection has 96",
    ),
    "missing": ({"dense": _dense()}, GOOD_SPARSE, "vector 'colbert' missing from collection"),
    "missing sparse": (GOOD_DENSE, None, "vector 'splade' missing from collection"),
    "extra": (
        {**GOOD_DENSE, "foo": _dense(8)},
        GOOD_SPARSE,
        "collection has extra vector 'foo'",
    ),
    "extra sparse": (
        GOOD_DENSE,
        {**GOOD_SPARSE, "bm25": models.SparseVectorParams()},
        "collection has extra vector 'bm25'",
    ),
    "single instead of multi": (
        {"dense": _dense(), "colbert": _dense(128)},
        GOOD_SPARSE,
        "vector 'colbert': multivector expected, collection has a single vector",
    ),
    "multi instead of single": (
        {"dense": _multi(384), "colbert": _multi()},
        GOOD_SPARSE,
        "vector 'dense': single vector expected, collection has a multivector",
    ),
    "dense instead of sparse": (
        {**GOOD_DENSE, "splade": _dense(30)},
        None,
        "vector 'splade': sparse vector expected, collection has a single vector",
    ),
    "sparse instead of dense": (
        {"colbert": _multi()},
        {**GOOD_SPARSE, "dense": models.SparseVectorParams()},
        "vector 'dense': single vector expected, collection has a sparse vector",
    ),
    "distance": (
        {"dense": _dense(distance=models.Distance.DOT), "colbert": _multi()},
        GOOD_SPARSE,
        "vector 'dense': distance Cosine expected, collection has Dot",
    ),
    "idf": (
        GOOD_DENSE,
        {"splade": models.SparseVectorParams(modifier=models.Modifier.IDF)},
        "vector 'splade': modifier none expected, collection has idf",
    ),
    "multi in RAM": (
        {"dense": _dense(), "colbert": _multi(on_disk=None)},
        GOOD_SPARSE,
        "vector 'colbert': on_disk true expected ([collection] multivector_on_disk), "
        "collection has false",
    ),
    "multi with HNSW": (
        {"dense": _dense(), "colbert": _multi(hnsw_config=None)},
        GOOD_SPARSE,
        "vector 'colbert': HNSW index false expected ([collection] multivector_hnsw), "
        "collection has true",
    ),
    "multi float16": (
        {"dense": _dense(), "colbert": _multi(datatype=models.Datatype.FLOAT16)},
        GOOD_SPARSE,
        "vector 'colbert': datatype float32 expected ([collection] multivector_datatype), "
        "collection has float16",
    ),
}


@pytest.mark.parametrize("case", list(MISMATCHES))
def test_each_mismatch_is_named_alone(case):
    dense, sparse, expected = MISMATCHES[case]
    params = models.CollectionParams(vectors=dense, sparse_vectors=sparse)
    assert schema_differences(SCHEMA, params) == [expected]


def test_the_matching_parameters_have_no_differences():
    params = models.CollectionParams(vectors=GOOD_DENSE, sparse_vectors=GOOD_SPARSE)
    assert schema_differences(SCHEMA, params) == []


def test_server_sharding_is_compared_where_set():
    params = models.CollectionParams(
        vectors=GOOD_DENSE, sparse_vectors=GOOD_SPARSE, shard_number=1, replication_factor=2
    )
    sharded = dataclasses.replace(SCHEMA, settings=CollectionSettings(shard_number=3))
    assert schema_differences(sharded, params) == [
        "shard_number 3 expected ([collection] shard_number), collection has 1"
    ]
    assert schema_differences(SCHEMA, params) == []  # not set: the server's own choice


def test_a_mismatch_on_edge_names_the_difference_and_keeps_the_collection(edge):
    from qdrant_client.models import PointStruct

    small = CollectionSchema("docs", (VectorSpec("dense", "dense", 8, "m"),))
    edge.create_collection("docs", small)
    edge.upsert("docs", [PointStruct(id=POINT_ID, vector={"dense": [1.0] * 8}, payload={"a": 1})])
    with pytest.raises(SchemaMismatchError) as err:
        ensure_collection(edge, SCHEMA)
    msg = str(err.value)
    assert "collection 'docs'" in msg and "size 384 expected, collection has 8" in msg
    assert "vector 'splade' missing" in msg and "vector 'colbert' missing" in msg
    assert isinstance(err.value, ValueError)
    assert edge.count("docs") == 1 and edge.retrieve("docs", [POINT_ID])[0].payload == {"a": 1}


def test_alias_is_resolved(edge):
    real = CollectionSchema("docs_v1", VECTORS)
    assert ensure_collection(edge, real) is True
    edge.switch_alias("docs", "docs_v1")
    assert ensure_collection(edge, SCHEMA) is False  # "docs" is the alias: nothing created
    assert edge.collections() == ["docs_v1"]

    other = CollectionSchema("docs", (VECTORS[0], VectorSpec("colbert", "multi", 64, "m")))
    with pytest.raises(SchemaMismatchError) as err:
        ensure_collection(edge, other)
    msg = str(err.value)
    assert "'docs_v1' (alias 'docs')" in msg
    assert "vector 'colbert': size 64 expected, collection has 128" in msg
    assert "collection has extra vector 'splade'" in msg


class Recorder:
    """qdrant-client's local mode standing in for a server (none can run here): every call
    passes through to it, and the calls only a server would act on are recorded. ``race``
    pretends another worker created the collection first (409)."""

    def __init__(self, race=False):
        self._inner = QdrantClient(location=":memory:")
        self.race = race
        self.calls = []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def create_collection(self, name, **kw):
        self.calls.append(("create_collection", name, kw))
        if self.race:
            raise UnexpectedResponse(409, "Conflict", b"already exists", None)
        return self._inner.create_collection(name, **kw)

    def create_payload_index(self, name, field, field_schema, wait):
        self.calls.append(("create_payload_index", name, field, field_schema, wait))

    def update_collection(self, name, **kw):
        self.calls.append(("update_collection", name, kw))


def test_what_a_server_is_sent():
    client = Recorder()
    store = ClientStore(client, description="server stand-in")  # type: ignore[arg-type]
    tuned = CollectionSettings(shard_number=2, replication_factor=3, write_consistency_factor=2)
    schema = dataclasses.replace(SCHEMA, settings=tuned)
    assert store.create_collection("docs", schema, defer_indexing=True) is True
    (_, _, kw), *rest = client.calls
    assert (kw["shard_number"], kw["replication_factor"], kw["write_consistency_factor"]) == (
        2,
        3,
        2,
    )
    assert kw["vectors_config"]["colbert"].hnsw_config == models.HnswConfigDiff(m=0)
    assert kw["vectors_config"]["colbert"].on_disk is True
    kwd, it = models.PayloadSchemaType.KEYWORD, models.PayloadSchemaType.INTEGER
    assert rest == [
        ("update_collection", "docs", {"optimizers_config": models.OptimizersConfigDiff(indexing_threshold=0)}),
        ("create_payload_index", "docs", "doc_id", kwd, True),
        ("create_payload_index", "docs", "chunk_index", it, True),
        ("create_payload_index", "docs", "source", kwd, True),  # the citation filters
        ("create_payload_index", "docs", "mime", kwd, True),
        ("create_payload_index", "docs", "page_start", it, True),
    ]  # fmt: skip
    before = client.get_collection("docs").config.optimizer_config.indexing_threshold
    store.finish_build("docs")  # restores indexing as the collection had it, then waits for green
    assert client.calls[-1] == (
        "update_collection",
        "docs",
        {"optimizers_config": models.OptimizersConfigDiff(indexing_threshold=before)},
    )
    store.close()


def test_lost_creation_race_compares_instead():
    client = Recorder()
    store = ClientStore(client, description="server stand-in")  # type: ignore[arg-type]
    ensure_collection(store, SCHEMA)
    client.race = True
    assert ensure_collection(ClientStore(client, description="x"), SCHEMA) is False  # type: ignore[arg-type]
    bad = CollectionSchema("docs", VECTORS[:2])
    with pytest.raises(SchemaMismatchError, match="extra vector 'colbert'"):
        ensure_collection(store, bad)
    store.close()
