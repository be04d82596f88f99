"""ensure_collection against embedded Qdrant: creation, matching, every kind of mismatch."""

import warnings

import pytest
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from poolq.sinks.schema import (
    CollectionSchema,
    SchemaMismatchError,
    VectorSpec,
    ensure_collection,
    is_local,
)

COS = models.Distance.COSINE
MAXSIM = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)
VECTORS = (
    VectorSpec("dense", "dense", 384, "minilm"),
    VectorSpec("splade", "sparse", None, "splade-tiny"),
    VectorSpec("colbert", "multi", 128, "colbert-tiny"),
)
SCHEMA = CollectionSchema("docs", VECTORS)
POINT_ID = "00000000-0000-0000-0000-000000000001"


@pytest.fixture
def client(tmp_path):
    c = QdrantClient(path=str(tmp_path / "qdrant"))
    yield c
    c.close()


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


def test_create_then_match(client):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "payload indexes have no effect" warning
        assert ensure_collection(client, SCHEMA) is True
    params = client.get_collection("docs").config.params
    assert params.vectors["dense"] == models.VectorParams(size=384, distance=COS)
    assert params.vectors["colbert"].size == 128
    assert params.vectors["colbert"].multivector_config == MAXSIM
    assert params.sparse_vectors["splade"].modifier is None
    assert ensure_collection(client, SCHEMA) is False
    assert ensure_collection(client, SCHEMA) is False


def _dense(size=384, distance=COS):
    return models.VectorParams(size=size, distance=distance)


def _multi(size=128):
    return models.VectorParams(size=size, distance=COS, multivector_config=MAXSIM)


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
}


@pytest.mark.parametrize("case", list(MISMATCHES))
def test_mismatch_names_the_difference_and_keeps_the_collection(client, case):
    dense, sparse, expected = MISMATCHES[case]
    client.create_collection("docs", vectors_config=dense, sparse_vectors_config=sparse)
    client.upsert("docs", [models.PointStruct(id=POINT_ID, vector={}, payload={"doc_id": "a"})])
    before = client.get_collection("docs").config.params

    with pytest.raises(SchemaMismatchError) as err:
        ensure_collection(client, SCHEMA)
    msg = str(err.value)
    assert "collection 'docs'" in msg and expected in msg, msg
    assert msg.count(";") == 0, f"only one difference expected: {msg}"
    assert isinstance(err.value, ValueError)
    # untouched: same config, point still there
    assert client.get_collection("docs").config.params == before
    assert client.count("docs", exact=True).count == 1
    assert client.retrieve("docs", [POINT_ID])[0].payload == {"doc_id": "a"}


def test_unnamed_vector_collection_reports_every_difference(client):
    client.create_collection("docs", vectors_config=_dense())
    with pytest.raises(SchemaMismatchError) as err:
        ensure_collection(client, SCHEMA)
    msg = str(err.value)
    for part in [
        "vector 'dense' missing from collection",
        "vector 'splade' missing from collection",
        "vector 'colbert' missing from collection",
        "collection has extra the unnamed default vector",
    ]:
        assert part in msg, msg


def test_alias_is_resolved(client):
    real = CollectionSchema("docs_v1", VECTORS)
    assert ensure_collection(client, real) is True
    client.update_collection_aliases(
        change_aliases_operations=[
            models.CreateAliasOperation(
                create_alias=models.CreateAlias(collection_name="docs_v1", alias_name="docs")
            )
        ]
    )
    assert ensure_collection(client, SCHEMA) is False  # "docs" is the alias: nothing created
    assert [c.name for c in client.get_collections().collections] == ["docs_v1"]

    other = CollectionSchema("docs", (VECTORS[0], VectorSpec("colbert", "multi", 64, "m")))
    with pytest.raises(SchemaMismatchError) as err:
        ensure_collection(client, other)
    msg = str(err.value)
    assert "'docs_v1' (alias 'docs')" in msg
    assert "vector 'colbert': size 64 expected, collection has 128" in msg
    assert "collection has extra vector 'splade'" in msg


class ServerLike:
    """A local client that claims to be a server: records payload index calls and can
    pretend another worker created the collection first (409)."""

    def __init__(self, inner, race=False):
        self._inner = inner
        self.race = race
        self.indexes = []

    def __getattr__(self, name):
        return getattr(self._inner, name)

    @property
    def init_options(self):
        return {"url": "http://qdrant:6333", "path": None, "location": None}

    def collection_exists(self, name):
        return False if self.race else self._inner.collection_exists(name)

    def create_collection(self, name, **kw):
        if self.race:
            raise UnexpectedResponse(409, "Conflict", b"already exists", None)
        return self._inner.create_collection(name, **kw)

    def create_payload_index(self, name, field, field_schema, wait):
        self.indexes.append((name, field, field_schema, wait))


def test_payload_indexes_on_a_server_only(client):
    assert is_local(client)
    server = ServerLike(client)
    assert not is_local(server)
    assert ensure_collection(server, SCHEMA) is True
    kw, it = models.PayloadSchemaType.KEYWORD, models.PayloadSchemaType.INTEGER
    assert server.indexes == [("docs", "doc_id", kw, True), ("docs", "chunk_index", it, True)]


def test_lost_creation_race_compares_instead(client):
    ensure_collection(client, SCHEMA)
    assert ensure_collection(ServerLike(client, race=True), SCHEMA) is False
    bad = CollectionSchema("docs", VECTORS[:2])
    with pytest.raises(SchemaMismatchError, match="extra vector 'colbert'"):
        ensure_collection(ServerLike(client, race=True), bad)
