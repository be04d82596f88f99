"""``poolq enqueue`` as a user runs it, against a real Redis with no worker: limits
checked before anything is enqueued (item 4), input errors with file and line (item 7), folder
choices (item 5), JSON lines (item 9), no worker while waiting and Ctrl-C (item 3). With a
worker: tests/integration/test_cli_first_hour.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import pytest
import redis

from poolq.wire import constants
from poolq.wire.serialization import deserialize

pytestmark = pytest.mark.slow  # the CLI in a subprocess, a real redis-server


def poolq(*args: str, timeout: float = 120, env: dict | None = None):
    return subprocess.run(
        [sys.executable, "-m", "poolq.worker", *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip


def jsonl(path, *records) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return str(path)


def queued_jobs(url: str) -> list[dict]:
    r = redis.Redis.from_url(url)
    try:
        ids = [
            i.decode()
            for q in (constants.INGEST_QUEUE, constants.PARSE_QUEUE)
            for i in r.zrange(q, 0, -1)
        ]  # fmt: skip  (a folder's files: the parse queue)
        return [deserialize(r.get(f"arq:job:{i}")) for i in ids]
    finally:
        r.close()


def queued_ids(url: str) -> list[str]:
    return [d["id"] for job in queued_jobs(url) for d in job["a"][1]]


def test_a_job_size_over_the_limit_is_refused_before_anything_is_enqueued(redis_server, tmp_path):
    src = jsonl(tmp_path / "in.jsonl", *({"id": f"d{i}", "text": "x"} for i in range(5)))
    r = poolq("enqueue", src, "--collection", "c", "--job-size", "2000", "--redis-url",
              redis_server.url)  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert "--job-size 2000" in r.stderr and "limit of 1000 documents per job" in r.stderr
    assert "nothing was enqueued" in r.stderr
    assert queued_jobs(redis_server.url) == []


def test_a_document_over_the_size_limit_is_reported_and_the_rest_are_enqueued(
    redis_server, tmp_path
):
    big = "word " * 220_000  # 1.1 MB > 1 MiB
    src = jsonl(tmp_path / "in.jsonl", {"id": "a", "text": "x"}, {"id": "big", "text": big},
                {"id": "c", "text": "y"})  # fmt: skip
    r = poolq("enqueue", src, "--collection", "c", "--redis-url", redis_server.url)
    assert r.returncode == 1, r.stderr
    assert f"{src}:2: document 'big': text is 1100000 bytes, over the default limit of " in r.stderr
    assert "not sent" in r.stderr
    assert sorted(queued_ids(redis_server.url)) == ["a", "c"]
    (line,) = r.stdout.splitlines()
    assert len(json.loads(line)["jobs"]) == 1


def test_input_errors_name_the_file_the_line_and_the_whole_reason(redis_server, tmp_path):
    src = jsonl(tmp_path / "in.jsonl", {"id": "a", "text": "ok"}, '{"id": "b", "text": "bro',
                {"text": "no id here"}, {"id": "a", "text": "again"}, {"id": "e", "text": " "})  # fmt: skip
    r = poolq("enqueue", src, "--collection", "c", "--redis-url", redis_server.url)
    assert r.returncode == 1, r.stderr
    err = r.stderr
    assert f"{src}:2: invalid JSON: Unterminated string starting at column 21" in err
    assert f"{src}:3: document without an id: id: missing" in err
    assert f"{src}:4: document 'a': id: appears more than once (first at {src}:1); not sent" in err
    assert f"{src}:5: document 'e': text: empty" in err
    assert "4 of 5 documents not sent" in err
    assert queued_ids(redis_server.url) == ["a"]


def test_json_lines_without_wait(redis_server, tmp_path):
    src = jsonl(tmp_path / "in.jsonl", *({"id": f"d{i}", "text": "x"} for i in range(5)))
    r = poolq("enqueue", src, "--collection", "c", "--job-size", "2", "--json", "--redis-url",
              redis_server.url)  # fmt: skip
    assert r.returncode == 0, r.stderr
    (line,) = r.stdout.splitlines()
    assert set(json.loads(line)) == {"jobs"} and len(json.loads(line)["jobs"]) == 3


def test_folder_choices_and_what_was_skipped(redis_server, tmp_path):
    root = tmp_path / "docs"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "notes.txt").write_text("git internals")
    (root / "a.txt").write_text("alpha")
    (root / "b.json").write_text("{}")
    (root / "c.rst").write_text("gamma")
    (root / "draft.md").write_text("delta")
    (root / "logo.gif").write_bytes(b"GIF89a" + bytes(32))  # (a PNG would be a scan: sent)
    r = poolq("enqueue", str(root), "--collection", "c", "--redis-url", redis_server.url)
    assert r.returncode == 0, r.stderr
    assert ("skipped 2 files not documents: b.json (a JSON file), logo.gif (a GIF image)"
            in r.stderr)  # fmt: skip
    assert "skipped 1 hidden: .git" in r.stderr
    assert sorted(queued_ids(redis_server.url)) == [
        (root / name).resolve().as_posix() for name in ("a.txt", "c.rst", "draft.md")
    ]  # fmt: skip
    r = poolq("enqueue", str(root), "--collection", "c", "--include", "*.rst", "--include", "*.md",
              "--exclude", "draft*", "--redis-url", redis_server.url)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (root / "c.rst").resolve().as_posix() in queued_ids(redis_server.url)
    assert "skipped 1 file matching --exclude draft*: draft.md" in r.stderr
    assert "skipped 3 files not matching *.rst, *.md: a.txt, b.json, logo.gif" in r.stderr


def test_an_empty_input_is_a_warning_and_a_failure(redis_server, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "only-json").mkdir()
    (tmp_path / "only-json" / "x.json").write_text("{}")
    (tmp_path / "empty.jsonl").write_text("\n")
    for name in ("empty", "only-json", "empty.jsonl"):
        r = poolq("enqueue", str(tmp_path / name), "--collection", "c", "--redis-url",
                  redis_server.url)  # fmt: skip
        assert r.returncode == 1, (name, r.stderr)
        assert f"warning: no documents in {tmp_path / name}" in r.stderr, r.stderr
    assert queued_jobs(redis_server.url) == []


def test_folder_flags_on_a_file_are_refused(redis_server, tmp_path):
    src = jsonl(tmp_path / "in.jsonl", {"id": "a", "text": "x"})
    r = poolq("enqueue", src, "--collection", "c", "--include", "*.txt", "--redis-url",
              redis_server.url)  # fmt: skip
    assert r.returncode == 2 and "--include" in r.stderr and "is a file" in r.stderr
    assert queued_jobs(redis_server.url) == []


def test_waiting_with_no_worker_says_so_once_and_gives_up_after_the_timeout(redis_server, tmp_path):
    src = jsonl(tmp_path / "in.jsonl", {"id": "a", "text": "x"})
    r = poolq("enqueue", src, "--collection", "c", "--wait", "--timeout", "5", "--redis-url",
              redis_server.url)  # fmt: skip
    assert r.returncode == 3, r.stderr
    # given up by --timeout, which it names (not by the subprocess's own 120 s limit)
    assert "1 of 1 jobs not finished after 5s (no worker is running" in r.stderr, r.stderr
    message = f"no worker is running on this Redis (127.0.0.1:{redis_server.port})"
    assert r.stderr.count(message) == 2, r.stderr  # said once while waiting, once at the end
    assert "poolq worker" in r.stderr
    assert len(queued_jobs(redis_server.url)) == 1  # the job is safe in the queue
    r_ = redis.Redis.from_url(redis_server.url)
    (job_id,) = [i.decode() for i in r_.zrange(constants.INGEST_QUEUE, 0, -1)]
    r_.close()
    assert f"poolq status {job_id}" in r.stderr


def test_ctrl_c_while_waiting_names_the_jobs_and_how_to_follow_them(redis_server, tmp_path):
    src = jsonl(tmp_path / "in.jsonl", *({"id": f"d{i}", "text": "x"} for i in range(3)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "poolq.worker", "enqueue", src, "--collection", "c", "--wait",
         "--job-size", "2", "--redis-url", redis_server.url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 60  # (a loaded machine starts the client slowly)
    while not any("no worker is running" in x for x in lines) and time.monotonic() < deadline:
        time.sleep(0.1)  # said once the client waits: both jobs are queued by then
    assert len(queued_jobs(redis_server.url)) == 2, lines
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    reader.join(timeout=10)
    err = "".join(lines)
    assert proc.returncode == 130, err
    r = redis.Redis.from_url(redis_server.url)
    job_ids = sorted(i.decode() for i in r.zrange(constants.INGEST_QUEUE, 0, -1))
    r.close()
    assert len(job_ids) == 2
    line = next(x for x in err.splitlines() if "poolq status" in x)
    assert sorted(line.split("poolq status ", 1)[1].rstrip("`").split()) == job_ids
    assert "Traceback" not in err
