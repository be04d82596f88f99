"""A scheduled reindex of a folder of documents: an unchanged file (by the hash of its bytes and
the parser's version) is not parsed again, a changed one is parsed and re-encoded, a deleted one
loses its points, a full rebuild parses every file behind the alias switch, and the files are
parsed with the worker's parse settings (its flags)."""

from __future__ import annotations

import asyncio

import pytest

from poolq.ingest.client import PoolqClient
from poolq.wire.records.reindex import ReindexSummary
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.parse.made_files import docx_file, html_page, pdf_pages

pytestmark = pytest.mark.slow


def reindex(url, source, *, full=False, collection="files"):
    async def go():
        async with PoolqClient(url) as client:
            job_id = await client.reindex(str(source), collection, full=full)
            (outcome,) = await client.wait([job_id], timeout_s=300)
            assert outcome.status == "done", outcome.error
            assert isinstance(outcome.result, ReindexSummary), outcome.result
            (progress,) = await client.reindex_progress(collection)
            hits = await client.search("where is the spare key", collection, limit=3)
            return outcome.result, progress, hits

    return asyncio.run(go())


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reindex-files")
    env = {
        "POOLQ_SOURCE_ROOTS": str(tmp),
        "POOLQ_PARSE_CHILD": "tests.parse.fault_child",  # a file marked HANG hangs its parser
    }
    flags = ("--parse-timeout", "3", "--parse-workers", "1")
    with (
        LocalRedis(tmp / "redis") as redis,
        WorkerProcess(redis.url, tmp / "qdrant", *flags, env=env),
    ):
        yield redis.url, tmp


def test_only_changed_files_are_parsed_again(live):
    url, tmp = live
    src = tmp / "src"
    src.mkdir()
    (src / "house.pdf").write_bytes(pdf_pages([["Water meter: in the cellar."],
                                                ["The spare key is under the blue pot."]]))  # fmt: skip
    (src / "car.docx").write_bytes(docx_file(["Tyre pressure: 2.3 bar."]))
    (src / "garden.html").write_bytes(html_page("<h1>Garden</h1><p>Prune roses in March.</p>"))
    first, progress, hits = reindex(url, src)
    assert (first.new, first.unchanged, progress.parsed, progress.pages) == (3, 0, 3, 2)
    cited = hits[0].citation
    assert cited.source == "house.pdf" and cited.page_start <= 2 <= cited.page_end

    again, progress, _ = reindex(url, src)
    assert (again.new, again.changed, again.unchanged, progress.parsed) == (0, 0, 3, 0)
    assert again.encoded_chunks == 0

    (src / "house.pdf").write_bytes(pdf_pages([["Water meter: in the cellar."], ["Nothing here."],
                                                ["The spare key is in the shed."]]))  # fmt: skip
    (src / "car.docx").unlink()
    changed, progress, hits = reindex(url, src)
    assert (changed.changed, changed.unchanged, changed.removed) == (1, 1, 1)
    assert progress.parsed == 1 and progress.pages == 3
    assert hits[0].citation.page_end == 3 and "shed" in hits[0].text


def test_a_full_rebuild_parses_every_file(live):
    url, tmp = live
    src = tmp / "src"
    full, progress, hits = reindex(url, src, full=True)
    assert full.new == 2 and progress.parsed == 2 and full.switched_from is not None
    assert hits[0].citation.source == "house.pdf"


def test_a_reindex_parses_with_the_workers_parse_flags(live):
    """``--parse-timeout 3`` bounds a reindex's files as it bounds a parse job's: a file whose
    parser hangs fails after 3 s (not the default 120 s), the other file is indexed."""
    url, tmp = live
    src = tmp / "hangs"
    src.mkdir()
    (src / "stuck.txt").write_bytes(b"HANG a file the parser never finishes")
    (src / "mat.md").write_text("# Mat\n\nThe spare key is under the door mat.\n")
    result, _, hits = reindex(url, src, collection="hangs")
    (error,) = result.errors
    assert error.code == "parse_timeout" and "limit of 3s" in error.error, error
    assert result.new == 1 and hits[0].citation.source == "mat.md"
