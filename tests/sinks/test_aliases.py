"""Collections behind aliases: creation, atomic switch, legacy physical collections, inventory."""

import numpy as np
import pytest
from qdrant_client import QdrantClient

from poolq.sinks.aliases import (
    ensure_served_collection,
    new_physical_name,
    physical_collections,
    point_alias,
)
from poolq.sinks.inventory import document_inventory
from poolq.sinks.points import PointRecord, point_id, to_point_struct
from poolq.sinks.schema import (
    CollectionSchema,
    SchemaMismatchError,
    VectorSpec,
    ensure_collection,
    resolve_alias,
)

SCHEMA = CollectionSchema("docs", (VectorSpec("dense", "dense", 4, "m"),))


@pytest.fixture
def client():
    c = QdrantClient(location=":memory:")
    yield c
    c.close()


def _put(client, collection, doc_id, n_chunks, **payload):
    pts = [
        to_point_struct(
            PointRecord(
                point_id(doc_id, i),
                {"dense": np.ones(4, dtype=np.float32)},
                {"doc_id": doc_id, "chunk_index": i, "chunk_count": n_chunks, **payload},
            ),
            arrays_ok=True,
        )
        for i in range(n_chunks)
    ]
    client.upsert(collection, pts)


def test_a_new_collection_is_created_behind_its_alias(client):
    assert ensure_served_collection(client, SCHEMA) is True
    target = resolve_alias(client, "docs")
    assert target != "docs" and target.startswith("docs__")
    assert physical_collections(client, "docs") == [target]
    assert ensure_served_collection(client, SCHEMA) is False  # now only compared
    other = CollectionSchema("docs", (VectorSpec("dense", "dense", 8, "m"),))
    with pytest.raises(SchemaMismatchError, match="alias 'docs'"):
        ensure_served_collection(client, other)


def test_point_alias_switches_atomically_and_returns_the_previous_target(client):
    ensure_served_collection(client, SCHEMA)
    old = resolve_alias(client, "docs")
    _put(client, "docs", "a", 2)
    new = new_physical_name("docs")
    assert new != old
    ensure_collection(client, CollectionSchema(new, SCHEMA.vectors))
    _put(client, new, "b", 1)
    assert point_alias(client, "docs", new) == old
    assert resolve_alias(client, "docs") == new
    assert client.count("docs").count == 1  # the alias reads the new collection
    assert client.count(old).count == 2  # the old one is untouched until dropped


def test_a_legacy_physical_collection_is_replaced_by_an_alias(client):
    ensure_collection(client, SCHEMA)  # a plain collection called "docs"
    new = new_physical_name("docs")
    ensure_collection(client, CollectionSchema(new, SCHEMA.vectors))
    assert point_alias(client, "docs", new) is None
    assert resolve_alias(client, "docs") == new


def test_inventory_reads_one_record_per_document_from_chunk_zero(client):
    ensure_served_collection(client, SCHEMA)
    _put(client, "docs", "a", 3, doc_hash="ha", meta_hash="ma", profile_version="v")
    _put(client, "docs", "b", 1, doc_hash="hb", meta_hash="mb", profile_version="w")
    inv = document_inventory(client, "docs", page_size=2)
    assert set(inv) == {"a", "b"}
    assert (inv["a"].doc_hash, inv["a"].chunk_count, inv["a"].profile_version) == ("ha", 3, "v")
    assert inv["b"].meta_hash == "mb"
