"""Lookups by id straight from protobuf (``sinks/proto/get.py``) against qdrant-client's own
conversion of the same messages: the request it would send, and the records it would return
(payloads with nested metadata, unicode, 64-bit integers, floats; fuzzed with hypothesis); then
``GrpcStore.retrieve`` against the Qdrant endpoint, as qdrant-client reads the same points."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qdrant_client import grpc as qgrpc
from qdrant_client import models
from qdrant_client.conversions.conversion import GrpcToRest, RestToGrpc

from poolq.sinks.points import PointRecord
from poolq.sinks.proto.get import get_request, records
from poolq.sinks.store.server import GrpcStore
from poolq.sinks.store.server_target import server_target
from tests.sinks.test_proto_upsert import json_values


def typed(x: object) -> str:
    return json.dumps(x, sort_keys=True)


point_ids = st.integers(0, 2**64 - 1) | st.uuids().map(str)
payloads = st.dictionaries(st.text(max_size=8), json_values, max_size=6)


@given(st.lists(point_ids, max_size=8), st.booleans() | st.lists(st.text(max_size=6), max_size=3))
@settings(max_examples=200, deadline=None)
def test_the_request_is_qdrant_clients(ids, with_payload):
    ours = qgrpc.GetPoints.FromString(get_request("c", ids, with_payload))
    theirs = qgrpc.GetPoints(
        collection_name="c",
        ids=[RestToGrpc.convert_extended_point_id(i) for i in ids],
        with_payload=RestToGrpc.convert_with_payload_interface(with_payload),
        with_vectors=RestToGrpc.convert_with_vectors(False),
    )
    assert ours == theirs


@given(st.lists(st.tuples(point_ids, payloads), max_size=6))
@settings(max_examples=200, deadline=None)
def test_the_records_are_qdrant_clients(found):
    response = qgrpc.GetResponse(
        result=[
            qgrpc.RetrievedPoint(
                id=RestToGrpc.convert_extended_point_id(pid),
                payload=RestToGrpc.convert_payload(payload),
            )
            for pid, payload in found
        ]
    )
    ours = records(response.SerializeToString())
    theirs = [GrpcToRest.convert_retrieved_point(p) for p in response.result]
    # as JSON text: 1 and 1.0, True and 1 differ there
    assert typed([(r.id, r.payload, r.vector) for r in ours]) == typed(
        [(r.id, r.payload, r.vector) for r in theirs]
    )
    assert all(isinstance(r, models.Record) for r in ours)


@pytest.fixture
def endpoint(tmp_path):
    from tests.support.qdrant_endpoint.server import start

    served = start(tmp_path / "data", port=0)
    yield served
    served.stop()


def test_the_server_store_reads_back_what_qdrant_client_reads(endpoint):
    store = GrpcStore(server_target(f"grpc://127.0.0.1:{endpoint.port}"))
    try:
        store.client.create_collection(
            "c", vectors_config={"d": models.VectorParams(size=2, distance="Cosine")}
        )
        ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"p{i}")) for i in range(5)]
        meta = {"tags": ["ü", "日本"], "n": 2**40, "x": 0.5, "ok": True, "none": None}
        store.upsert_records(
            "c",
            [
                PointRecord(p, {"d": [1.0, float(i)]}, {"doc_id": f"d{i}", "metadata": meta})
                for i, p in enumerate(ids)
            ],
        )
        wanted = [*ids[1:4], str(uuid.uuid4())]  # one that is not there
        for with_payload in (True, ["doc_id"], False):
            ours = store.retrieve("c", wanted, with_payload=with_payload)
            theirs = store.client.retrieve("c", wanted, with_payload=with_payload)
            key = lambda r: str(r.id)  # noqa: E731
            assert sorted(((str(r.id), r.payload) for r in ours), key=str) == sorted(
                ((str(r.id), r.payload) for r in theirs), key=str
            )
            assert len(ours) == 3 and all(key(r) in ids for r in ours)
        assert store.retrieve("c", []) == []
    finally:
        store.close()
