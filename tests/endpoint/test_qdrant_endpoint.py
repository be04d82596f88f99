"""The Qdrant endpoint as a Qdrant server, seen through qdrant-client (``prefer_grpc``) and
poolq's ``ClientStore``: collections as created, points read back bit-exact (uint8 as a
server stores it), count, scroll, deletes, payloads, aliases, and a server's status codes;
each compared with the same operations on an ``EdgeStore`` of its own folder."""

import grpc
import numpy as np
import pytest
from qdrant_client import models

from poolq.sinks.collections import ensure_collection
from poolq.sinks.schema_diff import schema_differences
from poolq.sinks.store import uint8_codec
from poolq.sinks.store.edge import EdgeStore
from poolq.wire.payload import DOC_ID
from tests.endpoint.conftest import points, schema

pytestmark = pytest.mark.slow


@pytest.fixture
def edge(tmp_path):
    s = EdgeStore(tmp_path / "edge")
    yield s
    s.close()


def code(e: pytest.ExceptionInfo) -> grpc.StatusCode:
    assert isinstance(e.value, grpc.RpcError)
    return e.value.code()


def by_id(records):
    return {str(r.id): r for r in records}


def test_collections_are_kept_as_created(client, store, edge):
    s = schema("c", dense_quantization="int8", multivector_datatype="float16")
    assert ensure_collection(store, s) is True
    assert ensure_collection(store, s) is False  # compared with its schema: the same
    edge.create_collection("c", s)
    ours, theirs = store.collection_params("c"), edge.collection_params("c")
    assert schema_differences(s, ours) == []
    assert ours.vectors["colbert"] == theirs.vectors["colbert"]  # float16, on disk, m = 0
    assert ours.vectors["colbert"].datatype == models.Datatype.FLOAT16
    assert ours.sparse_vectors == theirs.sparse_vectors
    quantized = ours.vectors["dense"].quantization_config
    assert isinstance(quantized, models.ScalarQuantization)
    assert quantized.scalar.type == models.ScalarType.INT8
    info = client.get_collection("c")
    assert info.status == models.CollectionStatus.GREEN and info.points_count == 0
    assert {k: v.data_type for k, v in info.payload_schema.items()} == {
        "doc_id": models.PayloadSchemaType.KEYWORD,
        "chunk_index": models.PayloadSchemaType.INTEGER,
        "source": models.PayloadSchemaType.KEYWORD,  # the citation filters
        "mime": models.PayloadSchemaType.KEYWORD,
        "page_start": models.PayloadSchemaType.INTEGER,
    }
    assert "c" in store.collections() and store.exists("c") and client.collection_exists("c")
    with pytest.raises(grpc.RpcError) as e:  # a server's 409
        client.create_collection("c", vectors_config={})
    assert code(e) == grpc.StatusCode.ALREADY_EXISTS
    with pytest.raises(grpc.RpcError) as e:
        client.get_collection("nope")
    assert code(e) == grpc.StatusCode.NOT_FOUND
    assert not client.collection_exists("nope")
    assert client.delete_collection("nope") is False  # as a server answers
    assert client.delete_collection("c") is True
    assert "c" not in store.collections()


def test_points_read_back_as_written(client, store, edge):
    s = schema("p")
    for st in (store, edge):
        ensure_collection(st, s)
        st.upsert("p", points(40, seed=1))
    ids = [str(p.id) for p in points(40, seed=1)]
    ours = by_id(store.retrieve("p", ids, with_vectors=True))
    theirs = by_id(edge.retrieve("p", ids, with_vectors=True))
    assert set(ours) == set(ids)
    for pid, r in ours.items():  # float32 through gRPC and back: the same bits
        assert r.payload == theirs[pid].payload
        for name in ("dense", "colbert"):
            assert np.array_equal(np.float32(r.vector[name]), np.float32(theirs[pid].vector[name]))
        assert r.vector["sparse"].indices == theirs[pid].vector["sparse"].indices
        assert r.vector["sparse"].values == theirs[pid].vector["sparse"].values
    assert store.count("p") == 40
    en = models.Filter(
        must=[models.FieldCondition(key="metadata.lang", match=models.MatchValue(value="en"))]
    )
    assert store.count("p", en) == edge.count("p", en) == 14
    # scroll: the same pages in the same order, offsets included
    seen, offset = [], None
    while True:
        page, offset = store.scroll("p", limit=7, offset=offset, flt=en)
        seen += [str(r.id) for r in page]
        if offset is None:
            break
    assert seen == [str(r.id) for r in edge.scroll("p", limit=100, flt=en)[0]]
    # selectors: a list of payload keys and of vectors
    one = client.retrieve("p", [ids[0]], with_payload=[DOC_ID], with_vectors=["dense"])[0]
    assert one.payload == {DOC_ID: "d0"} and set(one.vector) == {"dense"}
    exclude = models.PayloadSelectorExclude(exclude=["text"])
    bare = client.retrieve("p", [ids[0]], with_payload=exclude)[0]
    assert "text" not in bare.payload and bare.payload[DOC_ID] == "d0"
    # writes: set_payload, delete by filter, delete by ids
    for st in (store, edge):
        st.set_payload("p", ids[:3], {"tag": "x"})
        st.delete("p", models.FilterSelector(filter=en))
        st.delete("p", models.PointIdsList(points=ids[1:2]))
    assert store.count("p") == edge.count("p") == 40 - 14 - 1
    tagged = models.Filter(
        must=[models.FieldCondition(key="tag", match=models.MatchValue(value="x"))]
    )
    assert store.count("p", tagged) == edge.count("p", tagged) == 1
    client.set_payload("p", {"tag": "y"}, points=tagged, wait=True)  # by filter
    assert store.retrieve("p", [ids[2]])[0].payload["tag"] == "y"


def test_uint8_is_stored_as_a_server_stores_it(client, store, edge):
    """ClientStore codes the multi-vector; the endpoint casts the codes (no code map of its
    own): the codes come back as floats, ClientStore decodes them, and searching gives what
    EdgeStore (which codes itself) gives."""
    s = schema("u", multivector_datatype="uint8")
    written = points(30, seed=2)
    for st in (store, edge):
        ensure_collection(st, s)
        st.upsert("u", written)
    assert store.collection_params("u").vectors["colbert"].datatype == models.Datatype.UINT8
    ids = [str(p.id) for p in written]
    raw = by_id(client.retrieve("u", ids, with_vectors=["colbert"]))
    ours = by_id(store.retrieve("u", ids, with_vectors=True))
    theirs = by_id(edge.retrieve("u", ids, with_vectors=True))
    for p in written:
        codes = uint8_codec.encode(p.vector["colbert"]).astype(np.float32)
        assert np.array_equal(np.asarray(raw[str(p.id)].vector["colbert"]), codes)
        assert ours[str(p.id)].vector["colbert"] == theirs[str(p.id)].vector["colbert"]
    q = points(1, seed=9)[0].vector
    request = {
        "collection_name": "u",
        "query": q["colbert"],
        "using": "colbert",
        "prefetch": models.Prefetch(query=q["dense"], using="dense", limit=20),
        "limit": 5,
        "with_payload": True,
    }
    a, b = store.query(request), edge.query(request)
    assert [p.id for p in a] == [p.id for p in b]
    assert [p.score for p in a] == pytest.approx([p.score for p in b], abs=1e-5)


def test_aliases(client, store):
    for name in ("a1", "a2"):
        ensure_collection(store, schema(name))
    store.upsert("a1", points(3))
    store.switch_alias("live", "a1")
    assert store.aliases() == {"live": "a1"} and store.resolve("live") == "a1"
    assert store.count("live") == 3 and client.get_collection("live").points_count == 3
    store.switch_alias("live", "a2")  # delete + create, one call
    assert store.resolve("live") == "a2" and store.count("live") == 0
    client.update_collection_aliases(
        change_aliases_operations=[
            models.RenameAliasOperation(
                rename_alias=models.RenameAlias(old_alias_name="live", new_alias_name="prod")
            )
        ]
    )
    assert [a.alias_name for a in client.get_collection_aliases("a2").aliases] == ["prod"]
    # all or nothing: the second action fails, the first is not applied either
    with pytest.raises(grpc.RpcError) as e:
        client.update_collection_aliases(
            change_aliases_operations=[
                models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name="prod")),
                models.CreateAliasOperation(
                    create_alias=models.CreateAlias(collection_name="gone", alias_name="x")
                ),
            ]
        )
    assert code(e) == grpc.StatusCode.NOT_FOUND
    assert store.aliases() == {"prod": "a2"}
    with pytest.raises(grpc.RpcError) as e:
        store.switch_alias("a1", "a2")  # a collection's name
    assert code(e) == grpc.StatusCode.ALREADY_EXISTS
    client.delete_collection("a2")
    assert store.aliases() == {}  # its aliases went with it


def test_bad_requests_get_a_servers_status_codes(client, store):
    ensure_collection(store, schema("e"))

    def status(call):
        with pytest.raises(grpc.RpcError) as e:
            call()
        return code(e), e.value.details()

    bad = models.PointStruct(id=1, vector={"dense": [0.5] * 3}, payload={})
    c, msg = status(lambda: client.upsert("e", [bad]))
    assert c == grpc.StatusCode.INVALID_ARGUMENT and "dimension" in msg
    c, msg = status(lambda: client.query_points("e", query=[0.1] * 8, using="nope"))
    assert c == grpc.StatusCode.INVALID_ARGUMENT and "nope" in msg
    c, msg = status(
        lambda: client.query_points(
            "e", query=[0.1] * 8, using="dense", lookup_from=models.LookupLocation(collection="e")
        )
    )
    assert c == grpc.StatusCode.INVALID_ARGUMENT and "lookup_from" in msg
    c, _ = status(lambda: client.count("missing"))
    assert c == grpc.StatusCode.NOT_FOUND
    c, msg = status(
        lambda: client.create_collection(
            "s", vectors_config=models.VectorParams(size=4, distance="Dot"), shard_number=2
        )
    )
    assert c == grpc.StatusCode.INVALID_ARGUMENT and "shard_number" in msg
    c, _ = status(lambda: client.facet("e", key="doc_id"))  # a call it does not serve
    assert c == grpc.StatusCode.UNIMPLEMENTED
