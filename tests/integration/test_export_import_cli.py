"""`poolq export` and `poolq import` as a user runs them: refused while a worker holds the
folder; then folder -> file (and stdout) -> new folder with the count checked, the same lines
exported again, and a worker on the new folder answering searches on the moved collection."""

import json

import pytest

from poolq.ingest.client import SyncPoolqClient
from poolq.ingest.sample_corpus import passages
from poolq.worker.dev.local_worker import WorkerProcess
from tests.cli_process import poolq

pytestmark = pytest.mark.slow


def test_export_import_moves_a_collection_between_folders(redis_server, tmp_path):
    old, new, dump = tmp_path / "old", tmp_path / "new", tmp_path / "kb.jsonl"
    docs = [{"id": f"d{i}", "text": t, "metadata": {"i": i}} for i, t in enumerate(passages(40))]
    with WorkerProcess(redis_server.url, old):
        client = SyncPoolqClient(redis_server.url)
        try:
            outcomes = client.wait(client.enqueue("kb", docs, job_size=20))
            points = sum(o.result.points for o in outcomes)
            before = client.search(docs[7]["text"], "kb", mode="rerank", limit=5).hits
        finally:
            client.close()
        held = poolq("export", "--collection", "kb", "--qdrant-path", str(old), "-o", str(dump))
        assert held.returncode == 2 and not dump.exists()
        assert "poolq export: error:" in held.stderr and "held by another process" in held.stderr
        assert len(held.stderr.strip().splitlines()) == 1, held.stderr
        held = poolq("import", str(tmp_path), "--collection", "kb", "--qdrant-path", str(old))
        assert held.returncode == 2 and "is not a file" in held.stderr

    r = poolq("export", "--collection", "kb", "--qdrant-path", str(old), "-o", str(dump))
    assert r.returncode == 0, r.stderr
    assert f"exported {points} points of 'kb'" in r.stderr
    lines = dump.read_text().splitlines()
    assert len(lines) == points
    assert set(json.loads(lines[0])["vector"]) == {"dense", "sparse", "colbert"}
    out = poolq("export", "--collection", "kb", "--qdrant-path", str(old), "-o", "-")
    assert out.returncode == 0 and out.stdout.splitlines() == lines

    r = poolq("import", str(dump), "--collection", "kb", "--qdrant-path", str(new))
    assert r.returncode == 0, r.stderr
    assert f"imported {points} points into 'kb'" in r.stderr and "count verified" in r.stderr
    again = poolq("import", str(dump), "--collection", "kb", "--qdrant-path", str(new))
    assert again.returncode == 2 and "exists already" in again.stderr
    r = poolq("export", "--collection", "kb", "--qdrant-path", str(new), "-o", "-")
    assert sorted(r.stdout.splitlines()) == sorted(lines)  # identical vectors and payloads

    neither = poolq("export", "--collection", "kb", "-o", "-")
    assert neither.returncode == 2 and "exactly one of --qdrant-path" in neither.stderr
    missing = poolq("export", "--collection", "nope", "--qdrant-path", str(new), "-o", "-")
    assert missing.returncode == 2 and "collection 'nope' does not exist" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1, missing.stderr  # no progress bar first

    with WorkerProcess(redis_server.url, new):  # the moved collection serves as it was
        client = SyncPoolqClient(redis_server.url)
        try:
            after = client.search(docs[7]["text"], "kb", mode="rerank", limit=5).hits
        finally:
            client.close()
    assert [h.id for h in after] == [h.id for h in before]
    assert [h.score for h in after] == pytest.approx([h.score for h in before], abs=1e-4)


def test_the_worker_refuses_an_old_local_mode_folder_with_the_way_to_move_it(tmp_path):
    from qdrant_client import QdrantClient, models

    from poolq.sinks.store.edge import EdgeStore

    old = tmp_path / "old"
    client = QdrantClient(path=str(old))
    client.create_collection("docs", vectors_config=models.VectorParams(size=2, distance="Cosine"))
    client.close()
    args = ["--redis-url", "redis://127.0.0.1:1/0"]
    r = poolq("worker", "--qdrant-path", str(old), *args, timeout=60)
    assert r.returncode == 2 and "qdrant-client local-mode folder" in r.stderr
    assert f"poolq export --collection C --qdrant-path {old} -o C.jsonl" in r.stderr
    held = EdgeStore(tmp_path / "edge")  # as a running worker holds its folder
    try:
        r = poolq("worker", "--qdrant-path", str(tmp_path / "edge"), *args, timeout=60)
    finally:
        held.close()
    assert r.returncode == 2 and "held by another process" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_npy_is_the_default_and_jsonl_an_option(tmp_path):
    """-o NEW_DIR writes .npy shards (the default), -o FILE.jsonl / --format jsonl JSON lines;
    import tells them apart by the path; both give the same collection; a damaged shard is
    refused in one line naming the file."""
    from tests.sinks.test_npy_transfer import everything, filled

    filled(tmp_path / "old", n=50).close()
    src = ["--collection", "docs", "--qdrant-path", str(tmp_path / "old")]
    r = poolq("export", *src, "-o", str(tmp_path / "dump"))
    assert r.returncode == 0, r.stderr
    assert "exported 50 points of 'docs'" in r.stderr and "(npy)" in r.stderr
    assert (tmp_path / "dump" / "manifest.json").is_file()
    r = poolq("export", *src, "-o", str(tmp_path / "dump.txt"), "--format", "jsonl")
    assert r.returncode == 0 and len((tmp_path / "dump.txt").read_text().splitlines()) == 50
    again = poolq("export", *src, "-o", str(tmp_path / "dump"))
    assert again.returncode == 2 and "is a folder that exists" in again.stderr
    bad = poolq("export", *src, "-o", "-", "--format", "npy")
    assert bad.returncode == 2 and "--format npy writes a folder" in bad.stderr
    bad = poolq("export", *src, "-o", str(tmp_path / "x"), "--format", "parquet")
    assert (
        bad.returncode == 2 and "--format: expected one of npy, jsonl, got 'parquet'" in bad.stderr
    )

    for i, (given, extra) in enumerate(
        [(tmp_path / "dump", []), (tmp_path / "dump.txt", ["--format", "jsonl"])]
    ):
        dest = tmp_path / f"new{i}"
        r = poolq("import", str(given), "--collection", "docs", "--qdrant-path", str(dest), *extra)
        assert r.returncode == 0, r.stderr
        assert "imported 50 points into 'docs'" in r.stderr and "count verified" in r.stderr
    from poolq.sinks.store.edge import EdgeStore

    stores = [EdgeStore(tmp_path / n) for n in ("old", "new0", "new1")]
    try:
        a, b, c = (everything(s) for s in stores)
        assert a.keys() == b.keys() == c.keys()
        for pid in a:
            assert a[pid].payload == b[pid].payload == c[pid].payload
            assert a[pid].vector == b[pid].vector == c[pid].vector
    finally:
        for s in stores:
            s.close()

    shard = tmp_path / "dump" / "00000.v0.npy"
    shard.write_bytes(shard.read_bytes()[:-64])
    r = poolq(
        "import",
        str(tmp_path / "dump"),
        "--collection",
        "d2",
        "--qdrant-path",
        str(tmp_path / "new0"),
    )
    assert r.returncode == 2 and "00000.v0.npy" in r.stderr and "(truncated?)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = poolq(
        "import", str(tmp_path), "--collection", "d2", "--qdrant-path", str(tmp_path / "new0")
    )
    assert r.returncode == 2 and "nor an npy export (no manifest.json in it)" in r.stderr
