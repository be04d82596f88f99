"""The Qdrant endpoint (``tests/support/qdrant_endpoint``) for the tests: as a child process
(``EndpointProcess``, slow) or in this process (``server.start``), with qdrant-client and
poolq's ``ClientStore`` connected over gRPC; and the points the tests write."""

import numpy as np
import pytest
from qdrant_client import QdrantClient

from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.points import PointRecord, SparseValues, point_id, to_point_struct
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.store.client import ClientStore
from poolq.wire.payload import CHUNK_INDEX, DOC_ID, METADATA, TEXT
from tests.support.endpoint_process import EndpointProcess

DIM = 8


def connect(port: int, **kw) -> QdrantClient:
    return QdrantClient(
        host="127.0.0.1", grpc_port=port, prefer_grpc=True, check_compatibility=False, **kw
    )


def client_store(port: int) -> ClientStore:
    """poolq's server backend, connected to the endpoint as to a Qdrant server."""
    return ClientStore(connect(port), description="endpoint")


def schema(name: str = "c", **settings) -> CollectionSchema:
    """Dense, multi- and sparse vectors (DIM dimensions) under ``settings``."""
    return CollectionSchema(
        name,
        (
            VectorSpec("dense", "dense", DIM, "m"),
            VectorSpec("colbert", "multi", DIM, "m"),
            VectorSpec("sparse", "sparse", None, "s"),
        ),
        CollectionSettings(**settings),
    )


def points(n: int, seed: int = 0, docs: int | None = None):
    """``n`` points of the schema above (``docs`` documents, chunks in turn), float32 arrays
    as lists, payloads with metadata to filter on."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        doc = f"d{i % docs if docs else i}"
        chunk = i // docs if docs else 0
        idx = sorted(rng.choice(40, size=int(rng.integers(1, 8)), replace=False).tolist())
        vectors = {
            "dense": rng.normal(size=DIM).astype(np.float32),
            "colbert": rng.normal(size=(int(rng.integers(1, 6)), DIM)).astype(np.float32),
            "sparse": SparseValues(idx, rng.uniform(0.1, 2.0, size=len(idx)).round(3).tolist()),
        }
        meta = {"n": i, "lang": ["en", "de", "fr"][i % 3], "flag": i % 4 == 0}
        payload = {DOC_ID: doc, CHUNK_INDEX: chunk, TEXT: f"t{i}", METADATA: meta}
        out.append(to_point_struct(PointRecord(point_id(doc, chunk), vectors, payload)))
    return out


def query_vectors(seed: int = 3):
    rng = np.random.default_rng(seed)
    return {
        "dense": rng.normal(size=DIM).astype(np.float32),
        "colbert": rng.normal(size=(4, DIM)).astype(np.float32),
        "sparse": SparseValues([1, 5, 9, 17, 33], [1.0, 0.7, 0.4, 1.3, 0.2]),
    }


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    """One endpoint process for a test module (a test that uses it is slow)."""
    with EndpointProcess(tmp_path_factory.mktemp("endpoint") / "data") as ep:
        yield ep


@pytest.fixture(scope="module")
def client(endpoint):
    c = connect(endpoint.port)
    yield c
    c.close()


@pytest.fixture(scope="module")
def store(endpoint):
    s = client_store(endpoint.port)
    yield s
    s.close()
