"""Parse and encode on separate worker processes, meeting through Redis: the parse role imports
no torch, application code sends files as bytes or as paths (async and sync clients), and a
parser that hangs or crashes costs only its own file."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

from poolq import PoolqClient, SyncPoolqClient
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.parse.made_files import docx_file, html_page, pdf_pages

pytestmark = pytest.mark.slow

NO_TORCH = """raise ImportError("the parse role must not import torch")\n"""


class ParseWorker:
    """``poolq worker --role parse`` in a process where importing torch fails."""

    def __init__(self, redis_url: str, tmp, env: dict[str, str] | None = None) -> None:
        fake = tmp / "no-torch"
        (fake / "torch").mkdir(parents=True, exist_ok=True)
        (fake / "torch" / "__init__.py").write_text(NO_TORCH)
        self.log = tmp / "parse-worker.log"
        path = os.pathsep.join([str(fake), os.getcwd(), os.environ.get("PYTHONPATH", "")])
        self.env = {**os.environ, "PYTHONPATH": path, **(env or {})}
        self.cmd = [sys.executable, "-m", "poolq.worker", "worker", "--role", "parse",
                    "--redis-url", redis_url, "--parse-timeout", "3"]  # fmt: skip

    def __enter__(self) -> ParseWorker:
        self.out = self.log.open("wb")
        self.proc = subprocess.Popen(self.cmd, env=self.env, stdout=self.out, stderr=self.out)
        deadline = time.monotonic() + 60
        while b"ready" not in self.log.read_bytes():
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.1)
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.out.close()


@pytest.fixture(scope="module")
def roles(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("roles")
    env = {
        "POOLQ_PARSE_CHILD": "tests.parse.fault_child",  # marked files hang or crash
        "POOLQ_SOURCE_ROOTS": str(tmp / "shared"),  # where documents given by path may be
    }
    with (
        LocalRedis(tmp / "redis") as redis,
        WorkerProcess(redis.url, tmp / "qdrant", "--role", "encode"),
        ParseWorker(redis.url, tmp, env) as parse,
    ):
        yield redis.url, tmp, parse


def test_files_as_bytes_from_the_async_client_pass_both_roles(roles):
    url, _, parse = roles
    manual = pdf_pages([["# Boiler", "Bleed the radiators each autumn."], ["Reset: hold 5 s."]])

    async def main():
        async with PoolqClient(url) as client:
            ids = await client.enqueue("roles", [
                {"id": "boiler", "bytes": manual, "source": "boiler.pdf"},
                {"id": "memo", "bytes": docx_file(["Lunch is at one."]), "source": "memo.docx",
                 "metadata": {"team": "ops"}},
            ])  # fmt: skip
            (outcome,) = await client.wait(ids, timeout_s=120)
            hits = await client.search("when to bleed radiators", "roles", limit=1)
            return outcome, hits

    outcome, hits = asyncio.run(main())
    assert outcome.status == "done", outcome
    assert outcome.result.documents == 2 and outcome.result.parsed == 2
    assert outcome.result.pages == 2 and outcome.result.points >= 2  # (a DOCX has no pages)
    (hit,) = hits
    assert hit.doc_id == "boiler" and hit.citation.source == "boiler.pdf"
    assert hit.citation.page_start == 1 and hit.citation.mime == "application/pdf"
    assert parse.proc.poll() is None  # (and it never imported torch: see ParseWorker)


def test_files_by_path_from_the_sync_client(roles):
    url, tmp, _ = roles
    page = tmp / "shared" / "tides.html"
    page.parent.mkdir()
    page.write_bytes(html_page("<h1>Tides</h1><p>High water comes at six.</p>", title="Tides"))
    with SyncPoolqClient(url) as client:
        ids = client.enqueue("roles", [{"id": "tides", "path": str(page)}])
        (outcome,) = client.wait(ids, timeout_s=120)
        (hit,) = client.search("high water time", "roles", limit=1)
    assert outcome.status == "done" and outcome.result.documents == 1
    assert hit.doc_id == "tides" and hit.citation.source == str(page)
    assert hit.citation.headings == ("Tides",) and hit.citation.mime == "text/html"


def test_a_hang_and_a_crash_cost_only_their_own_files(roles):
    url, _, _ = roles
    t0 = time.monotonic()
    with SyncPoolqClient(url) as client:
        ids = client.enqueue("roles", [
            {"id": "hangs", "bytes": b"HANG a file the parser never finishes"},
            {"id": "crashes", "bytes": b"CRASH a file the parser dies on"},
            {"id": "fine", "bytes": b"A fine note about oysters."},
        ])  # fmt: skip
        (outcome,) = client.wait(ids, timeout_s=120)
    assert time.monotonic() - t0 < 60
    codes = {e.id: e.code.value for e in outcome.result.errors}
    assert codes == {"hangs": "parse_timeout", "crashes": "corrupt"}
    assert outcome.result.documents == 1 and outcome.status == "done"
    messages = {e.id: e.error for e in outcome.result.errors}
    assert "3s" in messages["hangs"] and "SIGSEGV" in messages["crashes"]
