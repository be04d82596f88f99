"""The endpoint's server in this process (``server.start``, no child process: fast): one
unnamed vector, the health check, the api key, a deferred index build reported YELLOW until
done and then run by ``ClientStore.finish_build`` as against a server, and a stop that
releases the folder."""

import threading
import time
import warnings

import grpc
import pytest
from qdrant_client import models

from poolq.sinks.store.edge import EdgeStore
from tests.endpoint.conftest import connect, points, schema
from tests.support.qdrant_endpoint.server import start


@pytest.fixture
def served(tmp_path):
    endpoint = start(tmp_path / "data", port=0)
    client = connect(endpoint.port)
    yield endpoint, client
    client.close()
    endpoint.stop()


def test_one_unnamed_vector(served):
    _, client = served
    client.create_collection("u", vectors_config=models.VectorParams(size=3, distance="Dot"))
    params = client.get_collection("u").config.params
    assert isinstance(params.vectors, models.VectorParams) and params.vectors.size == 3
    client.upsert("u", [models.PointStruct(id=i, vector=[i, 1.0, 0.0]) for i in range(1, 4)])
    hits = client.query_points("u", query=[1.0, 0.0, 0.0], limit=2, with_vectors=True).points
    assert [h.id for h in hits] == [3, 2] and hits[0].vector == [3.0, 1.0, 0.0]
    assert client.info().version  # the health check


def test_an_api_key_is_required_when_given(tmp_path):
    endpoint = start(tmp_path / "data", port=0, api_key="s3cret")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # qdrant-client: an api key without TLS
            anonymous, keyed = (
                connect(endpoint.port),
                connect(endpoint.port, api_key="s3cret", https=False),
            )
        with pytest.raises(grpc.RpcError) as e:
            anonymous.get_collections()
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert keyed.get_collections().collections == []
        anonymous.close()
        keyed.close()
    finally:
        endpoint.stop()


def test_a_deferred_build_is_yellow_until_done(served, monkeypatch):
    endpoint, client = served
    from poolq.sinks.store.client import ClientStore

    store = ClientStore(client, description="endpoint")
    assert store.create_collection("b", schema("b"), defer_indexing=True)
    info = client.get_collection("b")
    assert info.config.optimizer_config.indexing_threshold == 0
    store.upsert("b", points(300))
    release, real = threading.Event(), endpoint.store.finish_build

    def slow_build(name):
        release.wait(30)
        real(name)

    monkeypatch.setattr(endpoint.store, "finish_build", slow_build)
    client.update_collection(
        "b", optimizers_config=models.OptimizersConfigDiff(indexing_threshold=5000)
    )
    assert client.get_collection("b").status == models.CollectionStatus.YELLOW
    release.set()
    deadline = time.monotonic() + 60
    while client.get_collection("b").status != models.CollectionStatus.GREEN:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    info = client.get_collection("b")
    assert info.config.optimizer_config.indexing_threshold == 5000
    assert info.indexed_vectors_count > 0 and info.points_count == 300
    # deferred at creation too
    off = models.OptimizersConfigDiff(indexing_threshold=0)
    dense = models.VectorParams(size=2, distance="Dot")
    client.create_collection("z", vectors_config={"d": dense}, optimizers_config=off)
    assert client.get_collection("z").config.optimizer_config.indexing_threshold == 0
    # and as ClientStore runs a rebuild against a server: deferred, loaded, built, green
    assert store.create_collection("b2", schema("b2"), defer_indexing=True)
    store.upsert("b2", points(300))
    store.finish_build("b2")
    assert client.get_collection("b2").indexed_vectors_count > 0


def test_stop_releases_the_folder(tmp_path):
    endpoint = start(tmp_path / "data", port=0)
    client = connect(endpoint.port)
    client.create_collection("c", vectors_config=models.VectorParams(size=2, distance="Dot"))
    client.close()
    endpoint.stop()
    store = EdgeStore(tmp_path / "data")  # the lock is free, the collection there
    try:
        assert store.collections() == ["c"]
    finally:
        store.close()
