"""Export -> import between real stores: Qdrant Edge folder to folder (exact count, identical
vectors and payloads, the same export again), a qdrant-client local-mode folder onto Edge, and
every refusal naming the line, point or field."""

import json

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.collections import ensure_collection
from poolq.sinks.jsonl_points import PointLineError
from poolq.sinks.points import PointRecord, SparseValues, point_id, to_point_struct
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.store import open_store
from poolq.sinks.store.edge import EdgeStore
from poolq.sinks.transfer import TransferError, export_points, import_points

SCHEMA = CollectionSchema(
    "docs",
    (
        VectorSpec("dense", "dense", 16, "m"),
        VectorSpec("sparse", "sparse", None, "s"),
        VectorSpec("colbert", "multi", 16, "m"),
    ),
)
N = 300


def records(n=N):
    rng = np.random.default_rng(3)
    out = []
    for i in range(n):
        idx = sorted(rng.choice(30522, size=int(rng.integers(1, 40)), replace=False).tolist())
        payload = {
            "doc_id": f"d{i // 3}",
            "chunk_index": i % 3,
            "text": f"chunk {i} é ✓",
            "metadata": {"n": i, "flag": i % 2 == 0, "w": i / 7, "tags": ["a", None], "o": {}},
        }
        vectors = {
            "dense": rng.standard_normal(16).astype(np.float32),
            "sparse": SparseValues(idx, rng.random(len(idx)).astype(np.float32).tolist()),
            "colbert": rng.standard_normal((int(rng.integers(1, 9)), 16)).astype(np.float32),
        }
        out.append(PointRecord(point_id(f"d{i // 3}", i % 3), vectors, payload))
    return out


def export_lines(store, collection="docs"):
    lines: list[str] = []
    assert export_points(store, collection, lines.append, page_size=64) == len(lines)
    return lines


@pytest.fixture
def source(tmp_path):
    store = EdgeStore(tmp_path / "a")
    ensure_collection(store, SCHEMA)
    store.upsert("docs", [to_point_struct(r, arrays_ok=True) for r in records()])
    yield store
    store.close()


def test_folder_to_folder_is_exact(source, tmp_path):
    lines = export_lines(source)
    assert len(lines) == N and all(line.endswith("\n") for line in lines)
    first = json.loads(lines[0])
    assert set(first) == {"id", "payload", "vector"}
    assert set(first["vector"]) == {"dense", "sparse", "colbert"}
    assert set(first["vector"]["sparse"]) == {"indices", "values"}
    dest = EdgeStore(tmp_path / "b")
    try:
        seen = []
        report = import_points(dest, "docs", lines, batch=50, progress=seen.append)
        assert report.points == N == dest.count("docs") and sum(seen) == N
        assert report.collection.startswith("docs__") and dest.resolve("docs") == report.collection
        assert sorted(export_lines(dest)) == sorted(lines)  # identical vectors and payloads
        ids = [r.id for r in records()[:20]]
        a = {str(r.id): r for r in source.retrieve("docs", ids, with_vectors=True)}
        b = {str(r.id): r for r in dest.retrieve("docs", ids, with_vectors=True)}
        for pid in ids:
            assert a[pid].payload == b[pid].payload
            for name in ("dense", "colbert"):
                assert np.array_equal(np.asarray(a[pid].vector[name]), b[pid].vector[name])
            assert a[pid].vector["sparse"] == b[pid].vector["sparse"]
        assert dest.collection_params("docs").vectors["colbert"].hnsw_config.m == 0
    finally:
        dest.close()


def test_import_takes_the_storage_settings_it_is_given(source, tmp_path):
    dest = EdgeStore(tmp_path / "b")
    try:
        settings = CollectionSettings(multivector_datatype="float16", dense_quantization="int8")
        import_points(dest, "docs", export_lines(source), settings=settings)
        params = dest.collection_params("docs")
        assert params.vectors["colbert"].datatype == models.Datatype.FLOAT16
        assert params.vectors["dense"].quantization_config is not None
    finally:
        dest.close()


def test_a_local_mode_folder_moves_onto_edge(tmp_path):
    """An embedded store of an older poolq (qdrant-client local mode, behind an alias)."""
    old = QdrantClient(path=str(tmp_path / "old"))
    old.create_collection(
        "docs__20240101000000_abcd",
        vectors_config={
            "dense": models.VectorParams(size=16, distance=models.Distance.COSINE),
            "colbert": models.VectorParams(
                size=16,
                distance=models.Distance.COSINE,
                multivector_config=models.MultiVectorConfig(
                    comparator=models.MultiVectorComparator.MAX_SIM
                ),
            ),
        },
        sparse_vectors_config={"sparse": models.SparseVectorParams()},
    )
    old.update_collection_aliases(
        change_aliases_operations=[
            models.CreateAliasOperation(
                create_alias=models.CreateAlias(
                    collection_name="docs__20240101000000_abcd", alias_name="docs"
                )
            )
        ]
    )
    old.upsert("docs", [to_point_struct(r) for r in records(120)])
    old.close()
    reader = open_store(path=tmp_path / "old", local_mode_ok=True)
    try:
        lines = export_lines(reader)
        want = {
            r.id: r
            for r in reader.retrieve("docs", [r.id for r in records(120)], with_vectors=True)
        }
    finally:
        reader.close()
    dest = EdgeStore(tmp_path / "new")
    try:
        assert import_points(dest, "docs", lines).points == 120 == dest.count("docs")
        for got in dest.retrieve("docs", list(want)[:10], with_vectors=True):
            w = want[str(got.id)]
            assert got.payload == w.payload and got.vector["sparse"] == w.vector["sparse"]
            for name in ("dense", "colbert"):  # local mode kept them as given; Edge, unit length
                x = np.asarray(w.vector[name])
                unit = x / np.linalg.norm(x, axis=-1, keepdims=True)
                np.testing.assert_allclose(got.vector[name], unit, atol=1e-6)
    finally:
        dest.close()


def test_refusals_name_the_line_and_the_field(source, tmp_path):
    lines = export_lines(source)
    dest = EdgeStore(tmp_path / "b")
    try:
        with pytest.raises(TransferError, match="collection 'nope' does not exist"):
            export_points(source, "nope", print)
        bad_size = json.loads(lines[1])
        bad_size["vector"]["dense"] = bad_size["vector"]["dense"][:3]
        cases = [
            ([lines[0], "{not json\n"], r"line 2: not JSON"),
            ([lines[0], json.dumps(bad_size)], r"line 2: point '.*': vector 'dense' is dense of size 3; the collection's is dense of size 16"),
            ([lines[0], lines[0]], r"line 2: point '.*' comes twice in the file"),
            ([json.dumps({"id": "x", "vector": {}})], r"line 1: id must be a UUID or an unsigned integer, got 'x'"),
            ([json.dumps({"id": 1, "vector": {"d": [1, "a"]}})], r"line 1: point 1: vector 'd': 'a' is not a finite number"),
            ([json.dumps({"id": 1, "vector": {"s": {"indices": [1]}}})], r"line 1: point 1: sparse vector 's' needs exactly indices and values"),
            ([json.dumps({"id": 1, "vector": {}, "extra": 1})], r"line 1: unknown keys \['extra'\]"),
        ]  # fmt: skip
        for given, message in cases:
            with pytest.raises((PointLineError, TransferError), match=message):
                import_points(dest, "docs", given)
        assert dest.collections() == []  # nothing half-imported stays
        import_points(dest, "docs", lines)
        with pytest.raises(TransferError, match="collection 'docs' exists already"):
            import_points(dest, "docs", lines)
        with pytest.raises(TransferError, match="no points"):
            import_points(dest, "other", ["\n"])
    finally:
        dest.close()
