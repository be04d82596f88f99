"""A small job's hashing and metadata walk run on the event loop (a hop to a thread costs about
as much as the work); a large job's still go to a thread (``pipeline.inline_ok``). The results
are the same either way."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from poolq.wire.documents import Document, content_hash
from poolq.wire.records.progress import JobProgressRecord
from poolq.worker.app.jobs import ingest
from poolq.worker.runtime import pipeline
from poolq.worker.runtime.collection_fields import RecentFields, metadata_fields
from poolq.worker.runtime.job_progress import JobProgress


def docs(n: int, chars: int = 400) -> list[Document]:
    return [Document(f"d{i}", "x" * chars, {"i": i, "tags": ["a"]}) for i in range(n)]


@pytest.fixture
def hops(monkeypatch):
    """The functions sent to a thread by ``asyncio.to_thread`` (run here, in order)."""
    sent: list[object] = []

    async def to_thread(fn, *args, **kwargs):
        sent.append(fn)
        return fn(*args, **kwargs)

    monkeypatch.setattr(asyncio, "to_thread", to_thread)
    return sent


def test_inline_ok_is_for_few_and_short_documents():
    assert pipeline.inline_ok(docs(32))
    assert not pipeline.inline_ok(docs(pipeline.INLINE_MAX_DOCS + 1, chars=1))
    assert not pipeline.inline_ok(docs(2, chars=pipeline.INLINE_MAX_CHARS))


def fake_runtime(redis=None):
    async def read(fn, *, what=""):
        return {}  # nothing stored

    return SimpleNamespace(
        writer=SimpleNamespace(read=read),
        vectorizer=SimpleNamespace(version="v"),
        redis=redis,
        recent_fields=RecentFields(),
    )


@pytest.mark.parametrize(("n", "chars", "in_thread"), [(32, 400, False), (3, 40_000, True)])
def test_the_changed_check_hashes_small_jobs_inline(hops, n, chars, in_thread):
    job = docs(n, chars)
    todo, earlier = asyncio.run(ingest._changed(fake_runtime(), "c", job, {}))
    assert todo == job and earlier == {}
    assert bool(hops) is in_thread
    # hashed either way (Document caches them), with the same values
    assert all(d.__dict__["content_hash"] == content_hash(d.text) for d in job)
    assert all("metadata_hash" in d.__dict__ for d in job)


@pytest.mark.parametrize(("n", "chars", "in_thread"), [(32, 400, False), (3, 40_000, True)])
def test_metadata_fields_of_small_jobs_are_listed_inline(hops, monkeypatch, n, chars, in_thread):
    recorded = []

    async def record_fields(redis, collection, fields):
        recorded.append((collection, fields))

    monkeypatch.setattr(pipeline, "record_fields", record_fields)
    job = docs(n, chars)
    asyncio.run(pipeline._record_fields(fake_runtime(redis=object()), "c", job))
    assert recorded == [("c", metadata_fields([d.metadata for d in job]))]
    assert (metadata_fields in hops) is in_thread


@dataclass
class CountingProgress(JobProgress):
    seen: list[JobProgressRecord] = field(default_factory=list)

    async def publish(self) -> None:
        self.seen.append(self.state())


def pipeline_runtime(batch_points: int):
    from poolq.worker.chunks.chunking import Chunk
    from poolq.worker.runtime.vectorizer import Encoded

    async def encode(texts, ids, **kwargs):
        kwargs["on_queued"]()
        return [Encoded({}) for _ in texts]

    async def write(collection, points, *, replace_docs):
        return len(points)

    return SimpleNamespace(
        vectorizer=SimpleNamespace(
            chunk_many=lambda texts: [[Chunk(0, t, 0, len(t))] for t in texts],
            chunk_parsed_many=None,
            chunker=SimpleNamespace(counters=[]),
            encode=encode,
            model_ids=lambda: {},
            version="v",
            label_readers={},
        ),
        writer=SimpleNamespace(batch_points=batch_points, write=write),
        redis=None,
    )


@pytest.mark.parametrize(("batch_points", "publishes"), [(128, 1), (1, 3)])
def test_a_one_part_job_publishes_its_chunks_with_its_write(batch_points, publishes):
    progress = CountingProgress(None, "j", documents=2)
    out = asyncio.run(
        pipeline.ingest_documents(
            pipeline_runtime(batch_points), "c", docs(2), group="j", progress=progress
        )
    )
    assert out.points == 2 and out.documents == 2
    assert len(progress.seen) == publishes  # after chunking only when there is more to come
    assert progress.seen[0].chunks == 2 and progress.seen[-1].done == 2
