"""Anyone who can write to Redis can send a worker documents by path or URI, and reindex jobs:
through real workers, nothing outside the folders and URIs a worker is given is read, indexed or
searchable. ``/etc/passwd``, a ``../`` escape, a symlink out of the roots and ``file:///etc/passwd``
are refused with the code ``forbidden`` and a message naming the setting; with no roots at all
every path document is refused, and documents sent as bytes need none."""

from __future__ import annotations

import asyncio

import pytest

from poolq import PoolqClient
from poolq.wire.records.codes import ErrorCode
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.integration.test_parse_roles import ParseWorker

pytestmark = pytest.mark.slow

MARKER = "zebracrossing4471"  # the secret outside the roots: in no hit, ever
PASSWD = "root:x:0:0"


def secret_outside(tmp):
    """A folder of documents (the roots) and, beside it, a secret and the ways to reach it."""
    docs, secret = tmp / "docs", tmp / "secret"
    docs.mkdir()
    secret.mkdir()
    (secret / "passwords.txt").write_text(f"The vault code is {MARKER}.\n")
    (docs / "lighthouse.md").write_text("# Lighthouse\n\nThe lamp turns every ten seconds.\n")
    (docs / "leak.txt").symlink_to(secret / "passwords.txt")  # a symlink out of the roots
    return docs, secret


def refused(outcome) -> dict[str, tuple[str, str]]:
    return {e.id: (e.code, e.error) for e in outcome.result.errors}


@pytest.fixture(scope="module")
def confined(tmp_path_factory):
    """A worker whose source_roots is one folder (POOLQ_SOURCE_ROOTS)."""
    tmp = tmp_path_factory.mktemp("confined")
    docs, secret = secret_outside(tmp)
    env = {"POOLQ_SOURCE_ROOTS": str(docs)}
    with LocalRedis(tmp / "redis") as redis, WorkerProcess(redis.url, tmp / "qdrant", env=env):
        yield redis.url, docs, secret


def test_paths_and_file_uris_outside_the_roots_are_neither_read_nor_indexed(confined):
    url, docs, _ = confined
    escape = f"{docs}/../secret/passwords.txt"  # '..' resolves out of the roots
    files = [
        {"id": "inside", "path": str(docs / "lighthouse.md")},
        {"id": "passwd", "path": "/etc/passwd"},
        {"id": "dotdot", "path": escape},
        {"id": "symlink", "path": str(docs / "leak.txt")},
        {"id": "file-uri", "uri": "file:///etc/passwd"},
        {"id": "file-uri-escape", "uri": f"file://{escape}"},
    ]

    async def go():
        async with PoolqClient(url) as client:
            (outcome,) = await client.wait(await client.enqueue("kb", files), timeout_s=120)
            found = [
                h
                for q in ("root user shell bin bash", f"vault code {MARKER}", "lamp")
                for h in await client.search(q, "kb", limit=10)
            ]
            return outcome, found

    outcome, found = asyncio.run(go())
    assert outcome.result.parsed == 1 and outcome.result.documents == 1
    errors = refused(outcome)
    assert sorted(errors) == ["dotdot", "file-uri", "file-uri-escape", "passwd", "symlink"]
    for doc_id, (code, message) in errors.items():
        assert code == ErrorCode.FORBIDDEN, (doc_id, message)
        assert "source_roots" in message and "POOLQ_SOURCE_ROOTS" in message, message
        assert PASSWD not in message and MARKER not in message
    assert {h.doc_id for h in found} == {"inside"}
    assert not any(PASSWD in h.text or MARKER in h.text for h in found)


def test_a_folder_reindex_reads_nothing_outside_the_roots(confined):
    url, docs, secret = confined

    async def go():
        async with PoolqClient(url) as client:
            inside = (
                await client.wait([await client.reindex(str(docs), "folder")], timeout_s=120)
            )[0]
            outside = (
                await client.wait([await client.reindex(str(secret), "leak")], timeout_s=120)
            )[0]
            found = await client.search(f"vault code {MARKER}", "folder", limit=10)
            return inside, outside, found

    inside, outside, found = asyncio.run(go())
    assert inside.status == "done" and inside.result.new == 1  # lighthouse.md, not the link
    (error,) = inside.result.errors
    assert error.code == ErrorCode.FORBIDDEN and error.id.endswith("leak.txt")
    assert outside.status == "failed" and outside.code == ErrorCode.FORBIDDEN
    assert "outside the worker's source roots" in outside.error and "source_roots" in outside.error
    assert not any(MARKER in h.text for h in found)


def test_with_no_roots_every_path_is_refused_and_bytes_need_none(tmp_path):
    """A parse worker with no source_roots (the default): a path document is refused naming
    the setting, the same file sent as bytes is parsed and handed on."""
    docs, _ = secret_outside(tmp_path)
    page = docs / "lighthouse.md"

    async def go(url):
        async with PoolqClient(url) as client:
            (job_id,) = await client.enqueue("kb", [
                {"id": "by-path", "path": str(page)},
                {"id": "passwd", "path": "/etc/passwd"},
                {"id": "by-bytes", "bytes": page.read_bytes(), "source": "lighthouse.md"},
            ])  # fmt: skip
            while (outcome := await client.outcome(job_id)).status not in ("done", "failed"):
                await asyncio.sleep(0.1)  # the parse job's own outcome: no encode worker here
            return outcome

    with LocalRedis(tmp_path / "redis") as redis, ParseWorker(redis.url, tmp_path):
        outcome = asyncio.run(go(redis.url))
    assert outcome.status == "done", outcome
    errors = refused(outcome)
    assert sorted(errors) == ["by-path", "passwd"]
    for code, message in errors.values():
        assert code == ErrorCode.FORBIDDEN
        assert "no source_roots" in message and "--source-roots" in message, message
    assert outcome.result.parsed == 1 and len(outcome.result.next_jobs) == 1
