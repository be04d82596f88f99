"""The alias list straight from protobuf (``sinks/proto/aliases.py``) against qdrant-client's
``get_aliases`` (what ``ClientStore.aliases`` asks): the same map from the same response, and
from the Qdrant endpoint before and after aliases are made and switched; and none, as before,
for a key the server refuses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qdrant_client import grpc as qgrpc
from qdrant_client import models
from qdrant_client.conversions.conversion import GrpcToRest

from poolq.sinks.proto.aliases import alias_map
from poolq.sinks.store.client import ClientStore
from poolq.sinks.store.server import GrpcStore
from poolq.sinks.store.server_target import server_target

names = st.text(min_size=1, max_size=12)


@given(st.lists(st.tuples(names, names), max_size=6))
@settings(max_examples=100, deadline=None)
def test_the_map_is_qdrant_clients(pairs):
    response = qgrpc.ListAliasesResponse(
        aliases=[qgrpc.AliasDescription(alias_name=a, collection_name=c) for a, c in pairs]
    )
    theirs = [GrpcToRest.convert_alias_description(a) for a in response.aliases]
    assert alias_map(response) == {a.alias_name: a.collection_name for a in theirs}


@pytest.fixture
def endpoint(tmp_path):
    from tests.support.qdrant_endpoint.server import start

    served = start(tmp_path / "data", port=0, api_key="k")
    yield served
    served.stop()


def test_the_server_store_lists_what_qdrant_client_lists(endpoint):
    store = GrpcStore(server_target(f"grpc://127.0.0.1:{endpoint.port}"), api_key="k")
    try:
        theirs = lambda: ClientStore.aliases(store)  # noqa: E731 (qdrant-client's gRPC call)
        assert store.aliases() == theirs() == {}
        for name in ("a__1", "a__2", "b__1"):
            store.client.create_collection(
                name, vectors_config={"d": models.VectorParams(size=2, distance="Cosine")}
            )
        store.switch_alias("a", "a__1")
        store.switch_alias("b", "b__1")
        assert store.aliases() == theirs() == {"a": "a__1", "b": "b__1"}
        store.switch_alias("a", "a__2")
        assert store.aliases() == theirs() == {"a": "a__2", "b": "b__1"}
        assert store.resolve("a") == "a__2" and store.resolve("a__1") == "a__1"
    finally:
        store.close()


def test_a_refused_key_lists_none_as_before(endpoint):
    store = GrpcStore(server_target(f"grpc://127.0.0.1:{endpoint.port}"), api_key="wrong")
    try:
        assert store.aliases() == ClientStore.aliases(store) == {}
    finally:
        store.close()
