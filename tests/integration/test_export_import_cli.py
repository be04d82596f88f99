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
            points = sum(o.result["points"] for o in outcomes)
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
