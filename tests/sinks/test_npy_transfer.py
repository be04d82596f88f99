"""Export -> import as ``.npy`` shards with a manifest (the default format): bit for bit for
float32 and for uint8 codes, within one float16 step for float16 (Edge renormalises on write,
as for JSON lines), no larger than 1.2x the stored vector bytes, a JSON-lines export still
importable, and a truncated, corrupt or mislabelled shard refused in one line naming the file."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from poolq.sinks.collection_settings import CollectionSettings
from poolq.sinks.collections import ensure_collection
from poolq.sinks.npy_points import MANIFEST, NpyExportError
from poolq.sinks.points import PointRecord, SparseValues, point_id, to_point_struct
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.sinks.store.edge import EdgeStore
from poolq.sinks.transfer import export_npy, export_points, import_npy, import_points


def schema(datatype="float32", dim=16):
    return CollectionSchema(
        "docs",
        (
            VectorSpec("dense", "dense", dim, "m"),
            VectorSpec("sparse", "sparse", None, "s"),
            VectorSpec("colbert", "multi", dim, "m"),
        ),
        CollectionSettings(multivector_datatype=datatype),
    )


def records(n, dim=16, tokens=(1, 9), text="chunk {i} é ✓"):
    rng = np.random.default_rng(5)
    out = []
    for i in range(n):
        idx = sorted(rng.choice(30522, size=int(rng.integers(1, 40)), replace=False).tolist())
        vectors = {
            "dense": rng.standard_normal(dim).astype(np.float32),
            "sparse": SparseValues(idx, rng.random(len(idx)).astype(np.float32).tolist()),
            "colbert": rng.standard_normal((int(rng.integers(*tokens)), dim)).astype(np.float32),
        }
        if i % 17 == 5:
            del vectors["sparse"]  # a point without some vector
        payload = {"doc_id": f"d{i}", "chunk_index": 0, "text": text.format(i=i), "m": {"x": [1]}}
        out.append(PointRecord(point_id(f"d{i}", 0), vectors, payload))
    return out


def filled(path, datatype="float32", n=300, **kw):
    store = EdgeStore(path)
    ensure_collection(store, schema(datatype, kw.get("dim", 16)))
    store.upsert("docs", [to_point_struct(r, arrays_ok=True) for r in records(n, **kw)])
    return store


def everything(store):
    """id -> (payload, vectors as float32 arrays / sparse pairs)."""
    out, offset = {}, None
    while True:
        page, offset = store.scroll("docs", limit=128, offset=offset, with_vectors=True)
        for r in page:
            out[str(r.id)] = r
        if offset is None:
            return out


def test_npy_round_trip_is_bit_for_bit_for_float32(tmp_path):
    source = filled(tmp_path / "a")
    dest = EdgeStore(tmp_path / "b")
    try:
        assert export_npy(source, "docs", tmp_path / "x", page_size=64) == 300
        manifest = json.loads((tmp_path / "x" / MANIFEST).read_text())
        assert [(v["name"], v["datatype"]) for v in manifest["vectors"]] == [
            ("colbert", "float32"), ("dense", "float32"), ("sparse", "float32")
        ]  # fmt: skip
        seen: list[int] = []
        report = import_npy(dest, "docs", tmp_path / "x", batch=50, progress=seen.append)
        assert report.points == 300 == dest.count("docs") == sum(seen)
        a, b = everything(source), everything(dest)
        assert a.keys() == b.keys() and len(a) == 300
        for pid, r in a.items():
            assert b[pid].payload == r.payload
            assert set(b[pid].vector) == set(r.vector)
            for name in ("dense", "colbert"):
                x = np.asarray(r.vector[name], np.float32)
                y = np.asarray(b[pid].vector[name], np.float32)
                assert x.tobytes() == y.tobytes(), (pid, name)
            assert b[pid].vector.get("sparse") == r.vector.get("sparse")
        # the same export again, file for file
        export_npy(dest, "docs", tmp_path / "y")
        for f in sorted((tmp_path / "x").glob("*.npy")):
            assert f.read_bytes() == (tmp_path / "y" / f.name).read_bytes(), f.name
    finally:
        source.close()
        dest.close()


@pytest.mark.parametrize("datatype", ["float16", "uint8"])
def test_npy_round_trip_keeps_the_stored_datatype(tmp_path, datatype):
    source = filled(tmp_path / "a", datatype, n=120)
    dest = EdgeStore(tmp_path / "b")
    try:
        export_npy(source, "docs", tmp_path / "x")
        rows = np.load(next((tmp_path / "x").glob("00000.v0.npy")))  # colbert is v0
        assert rows.dtype == {"float16": np.float16, "uint8": np.uint8}[datatype]
        import_npy(dest, "docs", tmp_path / "x", settings=schema(datatype).settings)
        export_npy(dest, "docs", tmp_path / "y")
        a = np.load(tmp_path / "x" / "00000.v0.npy")
        b = np.load(tmp_path / "y" / "00000.v0.npy")
        if datatype == "uint8":  # codes are stored as given: bit for bit
            assert a.tobytes() == b.tobytes()
        else:  # Edge renormalises a cosine vector on write: one float16 step at most
            steps = np.abs(a.view(np.int16).astype(int) - b.view(np.int16).astype(int))
            assert steps.max() <= 1
        for part in ("v1.npy", "v2.values.npy", "v2.indices.npy", "points.jsonl"):
            x, y = (p / f"00000.{part}" for p in (tmp_path / "x", tmp_path / "y"))
            assert x.read_bytes() == y.read_bytes(), part
    finally:
        source.close()
        dest.close()


@pytest.mark.parametrize("datatype,itemsize", [("float32", 4), ("float16", 2), ("uint8", 1)])
def test_npy_export_is_at_most_1_2x_the_stored_vector_bytes(tmp_path, datatype, itemsize):
    """ColBERT-like shapes: 128 dimensions, 60-200 tokens a chunk, a short text payload."""
    recs = records(60, dim=128, tokens=(60, 200), text="a chunk of text, about this long")
    source = filled(tmp_path / "a", datatype, n=60, dim=128, tokens=(60, 200))
    try:
        export_npy(source, "docs", tmp_path / "x")
    finally:
        source.close()
    stored = sum(
        128 * 4
        + r.vectors["colbert"].shape[0] * 128 * itemsize
        + (len(r.vectors["sparse"].indices) * 8 if "sparse" in r.vectors else 0)
        for r in recs
    )
    size = sum(f.stat().st_size for f in Path(tmp_path / "x").iterdir())
    assert size <= 1.2 * stored, (size, stored)
    assert size >= stored  # every stored byte is there


def test_a_jsonl_export_still_imports_and_matches_the_npy_one(tmp_path):
    source = filled(tmp_path / "a", n=80)
    lines: list[str] = []
    export_points(source, "docs", lines.append)
    export_npy(source, "docs", tmp_path / "x")
    source.close()
    one, two = EdgeStore(tmp_path / "one"), EdgeStore(tmp_path / "two")
    try:
        import_points(one, "docs", lines)
        import_npy(two, "docs", tmp_path / "x")
        a, b = everything(one), everything(two)
        assert a.keys() == b.keys() and len(a) == 80
        for pid in a:
            assert a[pid].payload == b[pid].payload
            assert a[pid].vector == b[pid].vector
    finally:
        one.close()
        two.close()


def _damage(folder: Path, how: str) -> str:
    """Damage an export; returns the message expected."""
    shard = folder / "00000.v0.npy"
    manifest = folder / MANIFEST
    if how == "truncated":
        shard.write_bytes(shard.read_bytes()[:-100])
        return r"00000\.v0\.npy'?: \d+ bytes, manifest\.json says \d+ \(truncated\?\)"
    if how == "corrupt":
        data = bytearray(shard.read_bytes())
        data[-7] ^= 0xFF
        shard.write_bytes(bytes(data))
        return r"00000\.v0\.npy'?: CRC-32 differs from manifest\.json \(corrupt\)"
    if how == "missing":
        shard.unlink()
        return r"00000\.v0\.npy'?: missing \(listed in manifest\.json\)"
    if how == "no manifest":
        manifest.unlink()
        return r"holds no manifest\.json: not an export, or one that was interrupted"
    data = json.loads(manifest.read_text())
    if how == "wrong datatype":  # the file's rows are float32, the manifest says float16
        data["vectors"][0]["datatype"] = "float16"
        manifest.write_text(json.dumps(data))
        return r"00000\.v0\.npy'?: vector 'colbert': expected float16 \[n, 16\], got float32 \[\d+, 16\]"
    assert how == "wrong size"
    data["vectors"][1]["size"] = 8
    manifest.write_text(json.dumps(data))
    return r"00000\.v1\.npy'?: vector 'dense': expected float32 \[n, 8\], got float32 \[\d+, 16\]"


@pytest.mark.parametrize(
    "how", ["truncated", "corrupt", "missing", "no manifest", "wrong datatype", "wrong size"]
)
def test_a_damaged_export_is_refused_in_one_line_naming_the_file(tmp_path, how):
    source = filled(tmp_path / "a", n=40)
    export_npy(source, "docs", tmp_path / "x")
    source.close()
    message = _damage(tmp_path / "x", how)
    dest = EdgeStore(tmp_path / "b")
    try:
        with pytest.raises(NpyExportError, match=message) as e:
            import_npy(dest, "docs", tmp_path / "x")
        assert "\n" not in str(e.value)
        assert dest.collections() == []  # nothing half-imported stays
    finally:
        dest.close()


def test_export_refuses_a_folder_that_holds_something(tmp_path):
    source = filled(tmp_path / "a", n=5)
    try:
        (tmp_path / "x").mkdir()
        (tmp_path / "x" / "keep.txt").write_text("mine")
        with pytest.raises(NpyExportError, match="exists and is not an empty folder"):
            export_npy(source, "docs", tmp_path / "x")
        assert (tmp_path / "x" / "keep.txt").read_text() == "mine"
    finally:
        source.close()


AFTER_IMPORT = """
import os, signal, sys
from pathlib import Path
from poolq.sinks.store.edge import EdgeStore
from poolq.sinks.transfer import import_npy
from tests.sinks.test_npy_transfer import records
from poolq.sinks.points import to_point_struct
store = EdgeStore(Path(sys.argv[1]))
import_npy(store, "docs", Path(sys.argv[2]))
extra = records(301)[300]
store.upsert("docs", [to_point_struct(extra, arrays_ok=True)])
print("done", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_after_an_import_the_wal_is_on_again(tmp_path):
    """Import loads without a WAL (Edge replays it whole on every load); finish_build turns it
    back on: a write acknowledged after the import survives SIGKILL."""
    source = filled(tmp_path / "a")
    export_npy(source, "docs", tmp_path / "x")
    source.close()
    child = subprocess.run(
        [sys.executable, "-c", AFTER_IMPORT, str(tmp_path / "b"), str(tmp_path / "x")],
        capture_output=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=300,
    )
    assert child.stdout.strip() == b"done", child.stderr[-2000:]
    assert child.returncode == -signal.SIGKILL
    dest = EdgeStore(tmp_path / "b")
    try:
        assert dest.count("docs") == 301
        folder = next((tmp_path / "b" / "shards").iterdir())
        assert json.loads((folder / "edge_config.json").read_text()).get("wal_enabled") is None
    finally:
        dest.close()
