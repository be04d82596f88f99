"""`poolq enqueue` and `poolq status` as a user runs them, against a real worker."""

import json
import time

import pytest

from poolq.worker.dev.local_worker import WorkerProcess
from tests.cli_process import poolq

pytestmark = pytest.mark.slow


def test_enqueue_folder_wait_then_status(redis_server, tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text("Redis queues feed the pooling engine.")
    (docs / "sub" / "b.md").write_text("# Title\n\nQdrant stores dense, sparse and multi-vectors.")
    (docs / "empty.txt").write_text("   ")
    (docs / "ignored.bin").write_bytes(b"\x00")
    with WorkerProcess(redis_server.url, tmp_path / "qdrant"):
        r = poolq(
            "enqueue", str(docs), "--collection", "files", "--wait", "--redis-url", redis_server.url
        )
        assert r.returncode == 1, r.stderr  # one document was bad
        assert "2 documents, 2 points, 1 errors, 0 failed jobs" in r.stdout
        assert "empty.txt': file: empty.txt: no text in it" in r.stderr  # named by its path
        assert "skipped 1 file not documents: ignored.bin (a binary file)" in r.stderr
        jsonl = tmp_path / "more.jsonl"
        jsonl.write_text(json.dumps({"id": "x", "text": "one more"}) + "\n")
        r = poolq("enqueue", str(jsonl), "--collection", "files", "--redis-url", redis_server.url)
        assert r.returncode == 0, r.stderr
        job_id = json.loads(r.stdout)["jobs"][0]
        r = poolq(
            "enqueue",
            str(jsonl),
            "--collection",
            "files",
            "--wait",
            "--force",  # the same document again: written again, not skipped as unchanged
            "--redis-url",
            redis_server.url,
        )
        assert r.returncode == 0 and "1 documents, 1 points, 0 errors" in r.stdout, r.stdout
        # the worker's heartbeat (and its jobs_done) is refreshed every 2 s: poll for it
        deadline = time.monotonic() + 15
        while True:
            st = poolq("status", job_id, "--json", "--redis-url", redis_server.url)
            assert st.returncode == 0, st.stderr
            (line,) = st.stdout.splitlines()  # JSON lines: one object
            data = json.loads(line)
            # (a worker of --role all is two: this encode worker and its parse process)
            workers = [w for w in data["workers"] if w.get("role") != "parse"]
            if (workers and workers[0]["jobs_done"] >= 3) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert data["jobs"][0]["job_id"] == job_id and data["jobs"][0]["status"] == "done"
        assert data["jobs"][0]["result"]["points"] == 1
        assert data["counts"]["done"] >= 1
        assert len(workers) == 1 and workers[0]["jobs_done"] >= 3
        assert sorted(w.get("role") for w in data["workers"]) == ["all", "parse"]
        assert data["workers_alive"] == 2 and data["counts"]["done"] == 1  # (the given job)
        plain = poolq("status", "--redis-url", redis_server.url)
        # (the folder made a parse job and the ingest job it handed its documents to)
        assert plain.returncode == 0 and "4 done" in plain.stdout and "worker " in plain.stdout
    missing = poolq(
        "enqueue",
        str(tmp_path / "nope.jsonl"),
        "--collection",
        "c",
        "--redis-url",
        redis_server.url,
    )
    assert missing.returncode == 2 and "neither a JSONL file nor a folder" in missing.stderr
