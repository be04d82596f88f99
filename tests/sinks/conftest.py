"""Stores for the sink tests: a real Qdrant Edge folder, and qdrant-client's local mode only as
an independent oracle (the same points and the same request must rank the same)."""

import pytest
from qdrant_client import QdrantClient

from poolq.sinks.store.client import ClientStore
from poolq.sinks.store.edge import EdgeStore


@pytest.fixture
def edge(tmp_path):
    store = EdgeStore(tmp_path / "edge")
    yield store
    store.close()


def local_oracle() -> ClientStore:
    """qdrant-client local mode, in memory: a Python re-implementation of Qdrant."""
    return ClientStore(QdrantClient(location=":memory:"), description="oracle", local=True)


@pytest.fixture
def oracle():
    store = local_oracle()
    yield store
    store.close()
