"""The embedded store's folder and lifecycle on real Qdrant Edge: one process at a time, a clear
refusal of folders it cannot open (a qdrant-client local-mode folder names the way to move it),
the catalog after a crash, any collection name, background index building, deferred indexing
for rebuilds, and acknowledged writes surviving SIGKILL."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from poolq.sinks.points import PointRecord, point_id, to_point_struct
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.search import SearchRequest, search_points
from poolq.sinks.store import open_store
from poolq.sinks.store.edge import EdgeStore
from poolq.sinks.store.errors import NotAStoreError, StoreLockedError

SCHEMA = CollectionSchema(
    "c", (VectorSpec("dense", "dense", 8, "m"), VectorSpec("colbert", "multi", 8, "m"))
)


def points(n, start=0, seed=0):
    rng = np.random.default_rng(seed)
    return [
        to_point_struct(
            PointRecord(
                point_id("d", i),
                {
                    "dense": rng.standard_normal(8).astype(np.float32),
                    "colbert": rng.standard_normal((3, 8)).astype(np.float32),
                },
                {"doc_id": "d", "chunk_index": i, "chunk_count": n},
            ),
            arrays_ok=True,
        )
        for i in range(start, start + n)
    ]


def indexed(store, name):
    sh = store._shard(name)
    return sh.shard.info().indexed_vectors_count


def test_one_process_at_a_time(tmp_path):
    first = EdgeStore(tmp_path / "s")
    try:
        with pytest.raises(StoreLockedError, match=rf"held by another process \(pid {os.getpid()}"):
            EdgeStore(tmp_path / "s")
    finally:
        first.close()
    EdgeStore(tmp_path / "s").close()  # released on close


def test_a_local_mode_folder_is_refused_with_the_way_to_move_it(tmp_path):
    old = tmp_path / "old"
    client = QdrantClient(path=str(old))
    client.create_collection("docs", vectors_config=models.VectorParams(size=2, distance="Cosine"))
    client.close()
    with pytest.raises(NotAStoreError) as err:
        open_store(path=old)
    msg = str(err.value)
    assert "qdrant-client local-mode folder" in msg
    assert f"poolq export --collection C --qdrant-path {old} -o C.jsonl" in msg
    assert "poolq import C.jsonl --collection C --qdrant-path NEW_DIR" in msg
    reader = open_store(path=old, local_mode_ok=True)  # what poolq export opens
    try:
        assert reader.collections() == ["docs"]
    finally:
        reader.close()


def test_a_folder_of_something_else_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(NotAStoreError, match=r"holds \['notes.txt'\] but no catalog.json"):
        EdgeStore(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"  # untouched
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotAStoreError, match="is a file"):
        EdgeStore(tmp_path / "file")


def test_the_catalog_after_a_crash_names_only_whole_collections(tmp_path):
    store = EdgeStore(tmp_path / "s")
    store.create_collection("c", SCHEMA)
    store.upsert("c", points(5))
    store.close()
    orphan = tmp_path / "s" / "shards" / "half-made-1234"  # a creation cut short
    orphan.mkdir()
    (orphan / "edge_config.json").write_text("{}")
    catalog = json.loads((tmp_path / "s" / "catalog.json").read_text())
    assert catalog["format"] == "poolq-edge-store" and list(catalog["collections"]) == ["c"]
    store = EdgeStore(tmp_path / "s")
    try:
        assert not orphan.exists() and store.collections() == ["c"] and store.count("c") == 5
    finally:
        store.close()


def test_any_collection_name(edge):
    for name in ["a/b", "../x", "ünï code", ".hidden", "a" * 300]:
        assert edge.create_collection(name, SCHEMA.renamed(name)) is True
        edge.upsert(name, points(2))
        assert edge.count(name) == 2
    assert all(p.parent == edge.path / "shards" for p in (edge.path / "shards").iterdir())
    assert len(list((edge.path / "shards").iterdir())) == 5


def test_indexes_are_built_in_the_background_and_reads_go_on(tmp_path):
    store = EdgeStore(tmp_path / "s", optimize_every=200)
    try:
        store.create_collection("c", SCHEMA)
        assert indexed(store, "c") == 0
        q = {"dense": np.ones(8, dtype=np.float32), "colbert": np.ones((2, 8), dtype=np.float32)}
        hits = 0
        for start in range(0, 1200, 100):
            store.upsert("c", points(100, start))
            store.maintain()
            hits += len(search_points(store, SCHEMA, SearchRequest("c", "dense", 5), q))
        store._maintenance.join()
        assert store.optimizations >= 1  # (too few points for Qdrant to want an HNSW graph)
        assert store.count("c") == 1200 and hits == 5 * 12
    finally:
        store.close()


def big_points(n, start):
    """Dense 256-d points: 10,500 of them pass Qdrant's indexing threshold (10,000 KB)."""
    rng = np.random.default_rng(start)
    vectors = rng.standard_normal((n, 256)).astype(np.float32)
    return [
        models.PointStruct(id=start + i + 1, vector={"dense": vectors[i]}, payload={})
        for i in range(n)
    ]


def test_a_rebuild_defers_indexing_until_finish_build(tmp_path):
    big = CollectionSchema("new", (VectorSpec("dense", "dense", 256, "m"),))
    store = EdgeStore(tmp_path / "s", optimize_every=1000)
    try:
        store.create_collection("new", big, defer_indexing=True)
        for start in range(0, 9000, 1500):
            store.upsert("new", big_points(1500, start))
            store.maintain()  # a shard being rebuilt is only reopened, never optimized
            store.settle()
        assert store.optimizations == 0 and indexed(store, "new") == 0
        store.close()
        store = EdgeStore(tmp_path / "s", optimize_every=1000)  # still deferred when reopened
        store.upsert("new", big_points(1500, 9000))
        store.maintain()
        store.settle()
        assert store.optimizations == 0 and indexed(store, "new") == 0
        store.finish_build("new")
        assert indexed(store, "new") == 10_500 and store.count("new") == 10_500
        config = json.loads((store._shard("new").folder / "edge_config.json").read_text())
        assert config["optimizers"]["indexing_threshold"] is None
    finally:
        store.close()


WRITER = textwrap.dedent(
    """
    import sys
    from poolq.sinks.store.edge import EdgeStore
    from tests.sinks.test_edge_store import SCHEMA, points
    store = EdgeStore(sys.argv[1])
    store.create_collection("c", SCHEMA)
    start = int(sys.argv[2])
    store.upsert("c", points(500, start, seed=start))
    print("done", flush=True)
    import time
    time.sleep(60)
    """
)


@pytest.mark.slow  # starts processes
def test_an_acknowledged_write_survives_sigkill(tmp_path):
    """Twice, a child process upserts 500 points, says done and is SIGKILLed at once (no flush,
    no close): reopened, the folder holds every point, with its vectors. (The worker's own
    version, 20 times over: tests/integration/test_durability.py.)"""
    folder = tmp_path / "s"
    for start in (0, 500):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(folder), str(start)],
            stdout=subprocess.PIPE,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"done"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    store = EdgeStore(folder)
    try:
        assert store.count("c") == 1000
        want = points(500, 500, seed=500)[-1]
        (got,) = store.retrieve("c", [want.id], with_vectors=True)
        dense = want.vector["dense"] / np.linalg.norm(want.vector["dense"])
        np.testing.assert_allclose(got.vector["dense"], dense, atol=1e-6)
    finally:
        store.close()
