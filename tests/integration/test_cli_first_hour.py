"""The first hour of a user, with a real Redis and a real `poolq worker`: what the CLI
and the client do against a live worker. The worker runs with small limits (50 documents and
200,000 bytes per job) so the client has to learn them from its heartbeat."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from poolq.ingest.client import NoWorkerError, PoolqClient
from poolq.wire import constants
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess

pytestmark = pytest.mark.slow
MAX_DOCS, MAX_JOB_BYTES = 50, 200_000


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("first-hour")
    limits = {
        "POOLQ_MAX_DOCUMENTS_PER_JOB": str(MAX_DOCS),
        "POOLQ_MAX_JOB_BYTES": str(MAX_JOB_BYTES),
    }
    with LocalRedis(tmp / "redis") as server:
        worker = WorkerProcess(server.url, tmp / "qdrant", env=limits).start()
        try:
            yield server.url, tmp, worker
        finally:
            worker.stop()


def poolq(url, *args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "poolq.worker", *args, "--redis-url", url],
        capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"},
    )  # fmt: skip


def search_ids(url, query, collection, limit=10):
    out = poolq(url, "search", "--query", query, "--collection", collection, "--mode", "sparse",
                "--limit", str(limit), "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    return [json.loads(line)["doc_id"] for line in out.stdout.splitlines()]


def test_the_job_size_limit_comes_from_the_workers_heartbeat(live):
    url, tmp, _ = live
    src = tmp / "few.jsonl"
    src.write_text("".join(json.dumps({"id": f"f{i}", "text": "x"}) + "\n" for i in range(3)))
    out = poolq(url, "enqueue", str(src), "--collection", "limits", "--job-size", "60")
    assert out.returncode == 2
    assert f"--job-size 60 is over the worker's limit of {MAX_DOCS} documents per job" in out.stderr


def test_jobs_are_split_to_fit_the_workers_payload_limit(live):
    url, tmp, _ = live
    src = tmp / "big.jsonl"
    words = "harbour crane container ship quay berth pilot "
    src.write_text(
        "".join(json.dumps({"id": f"b{i}", "text": f"{words * 600} {i}"}) + "\n" for i in range(12))
    )  # 28 kB each, 340 kB in all: more than one job of 200,000 bytes
    out = poolq(url, "enqueue", str(src), "--collection", "split", "--wait", "--json")
    assert out.returncode == 0, out.stderr
    (line,) = out.stdout.splitlines()
    summary = json.loads(line)
    assert summary["jobs"] >= 2 and summary["failed_jobs"] == 0, summary
    assert summary["documents"] == 12 and summary["errors"] == []


def test_same_named_files_of_two_folders_are_two_documents(live):
    """They overwrote each other: both had the id 'notes.txt'."""
    url, tmp, _ = live
    for team, text in (("team-a", "alpha lighthouse keeper"), ("team-b", "beta lighthouse lamp")):
        (tmp / team).mkdir()
        (tmp / team / "notes.txt").write_text(f"The {text} notes.")
        out = poolq(url, "enqueue", str(tmp / team), "--collection", "folders", "--wait")
        assert out.returncode == 0, out.stderr
    ids = search_ids(url, "lighthouse", "folders")
    assert sorted(ids) == sorted(
        str((tmp / team / "notes.txt").resolve()) for team in ("team-a", "team-b")
    )


def test_unchanged_documents_are_skipped_and_force_rewrites_them(live):
    url, tmp, _ = live
    src = tmp / "same.jsonl"
    src.write_text("".join(json.dumps({"id": f"s{i}", "text": f"tide table {i}"}) + "\n"
                           for i in range(4)))  # fmt: skip
    first = poolq(url, "enqueue", str(src), "--collection", "skip", "--wait")
    assert first.returncode == 0 and "4 documents, 4 points" in first.stdout, first.stdout
    again = poolq(url, "enqueue", str(src), "--collection", "skip", "--wait")
    assert again.returncode == 0 and "4 skipped (unchanged)" in again.stdout, again.stdout
    forced = poolq(url, "enqueue", str(src), "--collection", "skip", "--wait", "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    summary = json.loads(forced.stdout)
    assert (summary["documents"], summary["skipped"]) == (4, 0), summary


def test_a_broken_line_is_named_and_counted_in_the_summary(live):
    url, tmp, _ = live
    src = tmp / "broken.jsonl"
    src.write_text(json.dumps({"id": "ok", "text": "fine text"}) + '\n{"id": "x", "text": "cut\n'
                   + json.dumps({"text": "no id"}) + "\n")  # fmt: skip
    out = poolq(url, "enqueue", str(src), "--collection", "broken", "--wait")
    assert out.returncode == 1
    assert f"{src}:2: invalid JSON: Unterminated string starting at column 21" in out.stderr
    assert f"{src}:3: document without an id: id: missing" in out.stderr
    assert "1 documents, 1 points, 2 errors" in out.stdout, out.stdout


def test_wait_reports_progress_per_document(live):
    url, _, _ = live
    docs = [{"id": f"p{i:03d}", "text": f"Paragraph {i} about rivers, " * 12} for i in range(150)]
    seen = []

    async def go():
        async with PoolqClient(url) as client:
            job_ids = await client.enqueue("progress", docs, job_size=MAX_DOCS)
            return await client.wait(job_ids, timeout_s=600, on_progress=seen.append)

    outcomes = asyncio.run(go())
    assert all(o.status == "done" for o in outcomes)
    steps = sorted({p.done for p in seen})
    assert steps[-1] == 150 and seen[-1].points >= 150 and seen[-1].chunks >= 150
    # moved inside jobs, not only job by job (multiples of 50)
    assert any(d % MAX_DOCS for d in steps) or any(
        p.chunks and p.done < MAX_DOCS * (p.finished + 1) for p in seen if p.finished < 3
    ), steps


def test_search_with_a_dash_query_and_the_demo_table(live, capsys):
    url, tmp, _ = live
    src = tmp / "dash.jsonl"
    src.write_text(json.dumps({"id": "dash", "text": "- Start writing the chapter today."}) + "\n")
    assert poolq(url, "enqueue", str(src), "--collection", "dash", "--wait").returncode == 0
    assert search_ids(url, "- Start writing", "dash") == ["dash"]
    from poolq.worker.cli.demo import RERANK_NOTE, _searches

    _searches(url, "dash", ["start writing", "chapter today"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = lines.index(next(x for x in lines if x.split()[:1] == ["query"] and "sparse" in x))
    assert lines[header].split() == ["query", "rerank", "hybrid", "dense", "sparse"]
    assert lines[header + 1].startswith("start writing ") and lines[header + 2].startswith(
        "chapter"
    )
    assert len(lines[header + 1].split()) == 2 + 4  # a top hit in every mode
    assert lines[-1] == RERANK_NOTE


def test_last_a_stopped_worker_is_no_worker(live):
    url, _, worker = live
    worker.stop()

    async def go():
        """At once, not after the 30 s timeout: the stopped worker left the workers' list, so
        the search is refused before its request is queued (none waits on the queue)."""
        async with PoolqClient(url) as client:
            with pytest.raises(NoWorkerError, match="no worker is running"):
                await client.search("anything", "dash", timeout_s=30)
            return await client.redis.llen(constants.SEARCH_QUEUE)

    assert asyncio.run(go()) == 0
