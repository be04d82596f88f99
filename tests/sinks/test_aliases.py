"""Collections behind aliases on Qdrant Edge: creation, atomic switch, legacy physical
collections, inventory; and a switch and drop under a loop of searches."""

import threading

import numpy as np
import pytest

from poolq.sinks.aliases import (
    ensure_served_collection,
    new_physical_name,
    physical_collections,
    point_alias,
)
from poolq.sinks.collections import ensure_collection
from poolq.sinks.inventory import document_inventory
from poolq.sinks.points import PointRecord, point_id, to_point_struct
from poolq.sinks.schema import CollectionSchema, SchemaMismatchError, VectorSpec
from poolq.sinks.search import SearchRequest, search_points

SCHEMA = CollectionSchema("docs", (VectorSpec("dense", "dense", 4, "m"),))


@pytest.fixture
def client(edge):
    return edge


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
    target = client.resolve("docs")
    assert target != "docs" and target.startswith("docs__")
    assert physical_collections(client, "docs") == [target]
    assert ensure_served_collection(client, SCHEMA) is False  # now only compared
    other = CollectionSchema("docs", (VectorSpec("dense", "dense", 8, "m"),))
    with pytest.raises(SchemaMismatchError, match="alias 'docs'"):
        ensure_served_collection(client, other)


def test_point_alias_switches_atomically_and_returns_the_previous_target(client):
    ensure_served_collection(client, SCHEMA)
    old = client.resolve("docs")
    _put(client, "docs", "a", 2)
    new = new_physical_name("docs")
    assert new != old
    ensure_collection(client, SCHEMA.renamed(new))
    _put(client, new, "b", 1)
    assert point_alias(client, "docs", new) == old
    assert client.resolve("docs") == new
    assert client.count("docs") == 1  # the alias reads the new collection
    assert client.count(old) == 2  # the old one is untouched until dropped


def test_the_switch_survives_reopening_the_folder(client, tmp_path):
    from poolq.sinks.store.edge import EdgeStore

    ensure_served_collection(client, SCHEMA)
    new = new_physical_name("docs")
    ensure_collection(client, SCHEMA.renamed(new))
    _put(client, new, "b", 3)
    point_alias(client, "docs", new)
    client.close()
    again = EdgeStore(client.path)
    try:
        assert again.resolve("docs") == new and again.count("docs") == 3
    finally:
        again.close()


def test_a_legacy_physical_collection_is_replaced_by_an_alias(client):
    ensure_collection(client, SCHEMA)  # a plain collection called "docs"
    new = new_physical_name("docs")
    ensure_collection(client, SCHEMA.renamed(new))
    assert point_alias(client, "docs", new) is None
    assert client.resolve("docs") == new and "docs" not in client.collections()


def test_inventory_reads_one_record_per_document_from_chunk_zero(client):
    ensure_served_collection(client, SCHEMA)
    _put(client, "docs", "a", 3, doc_hash="ha", meta_hash="ma", profile_version="v")
    _put(client, "docs", "b", 1, doc_hash="hb", meta_hash="mb", profile_version="w")
    inv = document_inventory(client, "docs", page_size=2)
    assert set(inv) == {"a", "b"}
    assert (inv["a"].doc_hash, inv["a"].chunk_count, inv["a"].profile_version) == ("ha", 3, "v")
    assert inv["b"].meta_hash == "mb"


def test_searches_during_switch_and_drop_see_no_error_and_no_empty_result(client):
    """Three threads: searches on the alias; the main thread rebuilds into a new shard,
    switches the alias and drops the old shard, 10 times over."""
    ensure_served_collection(client, SCHEMA)
    _put(client, "docs", "a", 5)
    stop = threading.Event()
    seen = {"searches": 0, "empty": 0, "errors": []}

    def loop():
        req = SearchRequest("docs", "dense", 3)
        while not stop.is_set():
            try:
                hits = search_points(client, SCHEMA, req, {"dense": [1.0, 0.0, 0.0, 0.0]})
            except Exception as e:
                seen["errors"].append(repr(e))
                continue
            seen["searches"] += 1
            seen["empty"] += not hits

    threads = [threading.Thread(target=loop) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(10):
            new = new_physical_name("docs") + str(i)
            client.create_collection(new, SCHEMA, defer_indexing=True)
            _put(client, new, f"r{i}", 2)
            client.finish_build(new)
            previous = point_alias(client, "docs", new)
            client.delete_collection(previous)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert seen["errors"] == [] and seen["empty"] == 0, seen
    assert seen["searches"] > 10
    assert len(client.collections()) == 1 and client.count("docs") == 2
