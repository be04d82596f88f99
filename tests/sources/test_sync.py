"""A collection kept in step with a bucket prefix by a worker, against a real S3 API (moto's
server), a real Redis and a worker process: new objects indexed, unchanged ones neither fetched
nor parsed, changed ones (by ETag, then content hash) re-encoded, deleted ones removed; the
store killed and brought back mid-sync with every object landing once; a store that stays down
parks the sync, which resumes by itself; ``poolq enqueue s3://...`` and a URL list."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from poolq.ingest.client import PoolqClient
from poolq.wire import constants
from poolq.wire.records.codes import ErrorCode
from poolq.wire.records.reindex import ReindexSkipped, ReindexSummary
from poolq.wire.records.sync import SyncCheckpoint
from poolq.worker.dev.local_redis import LocalRedis
from poolq.worker.dev.local_worker import WorkerProcess
from tests.cli_process import poolq
from tests.parse.made_files import html_page
from tests.sources.s3_server import S3Server

pytestmark = pytest.mark.slow
BUCKET = "team-docs"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sources-sync")
    with S3Server() as s3, pytest.MonkeyPatch.context() as mp:
        for name, value in s3.env().items():  # the CLI's listing reads them too
            mp.setenv(name, value)
        env = {
            **s3.env(),
            "POOLQ_SOURCE_URIS": f"s3://{BUCKET}/",
            "POOLQ_SOURCE_RETRY_S": "10",
            "POOLQ_SOURCE_PARK_S": "2",
        }
        with LocalRedis(tmp / "redis") as redis, WorkerProcess(redis.url, tmp / "qdrant", env=env):
            yield redis.url, s3, s3.bucket(BUCKET), tmp


def run(coro):
    return asyncio.run(coro)


async def sync(url, prefix, collection, *, full=False, during=None):
    async with PoolqClient(url) as client:
        job_id = await client.reindex(f"s3://{BUCKET}/{prefix}", collection, full=full)
        if during is not None:
            await during(client)
        (outcome,) = await client.wait([job_id], timeout_s=300)
        assert outcome.status == "done", outcome.error
        (progress,) = await client.reindex_progress(collection)
        return outcome.result, progress


async def hits(url, query, collection):
    async with PoolqClient(url) as client:
        return await client.search(query, collection, limit=3)


def test_a_prefix_synced_again_and_again(live):
    url, _, s3, _ = live
    put = lambda key, body: s3.put_object(Bucket=BUCKET, Key=f"kb/{key}", Body=body)  # noqa: E731
    put("house.md", b"# House\n\nThe spare key is under the blue pot.")
    put("car.txt", b"Tyre pressure: 2.3 bar front, 2.5 bar rear.")
    put("garden/roses.html", html_page("<h1>Roses</h1><p>Prune roses in March.</p>"))
    put("photo.png", b"\x89PNG\r\n\x1a\n....")  # no document: left out by its name
    first, progress = run(sync(url, "kb/", "kb"))
    assert isinstance(first, ReindexSummary)
    assert (first.new, first.unchanged, first.removed, first.errors) == (3, 0, 0, [])
    assert (progress.listed, progress.fetched, progress.parsed) == (4, 3, 3)
    (hit, *_) = run(hits(url, "where is the spare key", "kb"))
    assert hit.citation.source == f"s3://{BUCKET}/kb/house.md"

    again, progress = run(sync(url, "kb/", "kb"))
    assert (again.new, again.changed, again.unchanged, again.removed) == (0, 0, 3, 0)
    assert again.fetched == 0 and again.encoded_chunks == 0 and progress.parsed == 0

    put("house.md", b"# House\n\nThe spare key is now in the shed.")  # a new ETag
    s3.delete_object(Bucket=BUCKET, Key="kb/car.txt")
    put("garden/tulips.md", b"# Tulips\n\nPlant tulips in October.")
    changed, progress = run(sync(url, "kb/", "kb"))
    assert (changed.new, changed.changed, changed.unchanged, changed.removed) == (1, 1, 1, 1)
    assert changed.fetched == 2 and progress.parsed == 2
    (hit, *_) = run(hits(url, "where is the spare key", "kb"))
    assert "shed" in hit.text

    rebuilt, _ = run(sync(url, "kb/", "kb", full=True))
    assert rebuilt.new == 3 and rebuilt.fetched == 3 and rebuilt.switched_from is not None


def test_the_store_killed_and_restarted_mid_sync_every_object_lands_once(live):
    url, server, s3, _ = live
    for i in range(40):
        s3.put_object(
            Bucket=BUCKET, Key=f"many/{i:03d}.md", Body=f"# Note {i}\n\nFact {i}.".encode()
        )

    async def kill_and_restart(client):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            records = await client.reindex_progress("many")
            if records and records[0].state == "syncing":
                break
            await asyncio.sleep(0.02)
        server.stop()
        threading.Timer(3.0, server.start).start()

    first, _ = run(sync(url, "many/", "many", during=kill_and_restart))
    assert (first.new, first.errors) == (40, [])
    assert first.seconds >= 2.5  # it waited for the store to come back
    again, _ = run(sync(url, "many/", "many"))
    assert (again.new, again.changed, again.unchanged, again.fetched) == (0, 0, 40, 0)


def test_a_store_that_stays_down_parks_the_sync_which_resumes(live):
    url, server, s3, _ = live
    s3.put_object(Bucket=BUCKET, Key="parked/a.md", Body=b"# A\n\nThe boiler is in the attic.")
    server.stop()
    try:
        parked, progress = run(sync(url, "parked/", "parked"))
    finally:
        server.start()
    assert isinstance(parked, ReindexSkipped) and parked.skipped.startswith("parked: ")
    assert "resumes from its checkpoint" in parked.skipped and progress.state == "parked"

    async def resumed():
        async with PoolqClient(url) as client:
            assert await client.redis.exists(constants.SOURCE_SYNC_KEY.format(collection="parked"))
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                (p,) = await client.reindex_progress("parked")
                if p.state == "done":
                    return p
                await asyncio.sleep(0.2)
            raise AssertionError(f"not resumed: {p}")

    done = run(resumed())
    assert done.result is not None and done.result.new == 1


def test_poolq_enqueue_lists_a_prefix_and_reads_a_url_list(live, tmp_path):
    url, _, s3, _ = live
    s3.put_object(Bucket=BUCKET, Key="enq/a.md", Body=b"# Fuses\n\nThe fuse box is by the door.")
    s3.put_object(Bucket=BUCKET, Key="enq/skip/b.md", Body=b"# Skip\n\nNot this one.")
    s3.put_object(Bucket=BUCKET, Key="enq/c.txt", Body=b"x" * 3000)
    r = poolq("enqueue", f"s3://{BUCKET}/enq/", "--collection", "enq", "--exclude", "skip/*",
              "--max-file-bytes", "2000", "--wait", "--redis-url", url)  # fmt: skip
    assert r.returncode == 1, r.stderr  # one object over the limit: named, not sent
    assert f"s3://{BUCKET}/enq/c.txt" in r.stderr and "--max-file-bytes" in r.stderr
    assert "skipped 1 objects excluded: skip/b.md" in r.stderr
    (hit, *_) = run(hits(url, "where is the fuse box", "enq"))
    assert hit.citation.source == f"s3://{BUCKET}/enq/a.md"

    urls = tmp_path / "urls.txt"
    urls.write_text(f"# one a line\ns3://{BUCKET}/enq/skip/b.md\nftp://nope/x\n")
    r = poolq("enqueue", str(urls), "--urls", "--collection", "enq", "--wait", "--redis-url", url)
    assert r.returncode == 1 and "urls.txt:3" in r.stderr and "'ftp'" in r.stderr, r.stderr
    assert "1 points" in r.stdout or "documents" in r.stdout, r.stdout
    assert os.environ["AWS_SECRET_ACCESS_KEY"] not in r.stderr + r.stdout


def test_no_credential_is_logged_or_written_to_redis(live):
    url, server, _, _ = live
    secret = server.env()["AWS_SECRET_ACCESS_KEY"]
    logs = list(live_tmp(live).glob("worker-*.log"))
    assert logs and not any(secret in p.read_text(errors="replace") for p in logs)

    async def scan():
        async with PoolqClient(url) as client:
            async for key in client.redis.scan_iter(count=1000):
                kind = await client.redis.type(key)
                if kind == b"string":
                    assert secret.encode() not in (await client.redis.get(key) or b""), key

    run(scan())


def live_tmp(live):
    return live[3]


def test_a_killed_sync_resumes_after_its_last_checkpointed_page(live):
    """What a worker killed mid-sync leaves: a checkpoint after the pages it finished. The next
    run lists from there and keeps the counts; it does not start over."""
    url, _, s3, _ = live
    for name in "abcde":
        s3.put_object(
            Bucket=BUCKET, Key=f"resume/{name}.md", Body=f"# {name}\n\nNote {name}.".encode()
        )
    ck = SyncCheckpoint(
        source=f"s3://{BUCKET}/resume/", collection="resume", full=False, target="resume",
        after=f"s3://{BUCKET}/resume/c.md", listed=3, fetched=3, parsed=3, new=3,
    )  # fmt: skip

    async def plant():
        async with PoolqClient(url) as client:
            await client.redis.set(constants.SOURCE_SYNC_KEY.format(collection="resume"), ck.pack())

    run(plant())
    resumed, progress = run(sync(url, "resume/", "resume"))
    assert (resumed.listed, resumed.fetched, resumed.new) == (5, 5, 5)
    assert progress.parsed == 5
    # only d and e were fetched by this run (a, b and c were the killed run's): the collection
    # holds those two, and the next sync finds the other three new
    after, _ = run(sync(url, "resume/", "resume"))
    assert (after.new, after.unchanged, after.listed) == (3, 2, 5)


def test_a_new_etag_over_the_same_bytes_only_updates_the_tag(live):
    """A multipart re-upload of the same bytes gets another ETag (``<md5>-<parts>``): fetched
    and hashed, but neither parsed nor encoded again; the next sync does not fetch it."""
    url, _, s3, _ = live
    body = b"# Meter\n\nThe water meter is in the cellar."
    s3.put_object(Bucket=BUCKET, Key="etag/meter.md", Body=body)
    first, _ = run(sync(url, "etag/", "etag"))
    assert first.new == 1
    up = s3.create_multipart_upload(Bucket=BUCKET, Key="etag/meter.md")
    part = s3.upload_part(
        Bucket=BUCKET, Key="etag/meter.md", UploadId=up["UploadId"], PartNumber=1, Body=body
    )
    s3.complete_multipart_upload(
        Bucket=BUCKET, Key="etag/meter.md", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]},
    )  # fmt: skip
    assert s3.head_object(Bucket=BUCKET, Key="etag/meter.md")["ETag"].endswith('-1"')
    retagged, progress = run(sync(url, "etag/", "etag"))
    assert (retagged.metadata_only, retagged.changed, retagged.fetched) == (1, 0, 1)
    assert retagged.encoded_chunks == 0 and progress.parsed == 0
    again, _ = run(sync(url, "etag/", "etag"))
    assert (again.unchanged, again.fetched, again.metadata_only) == (1, 0, 0)
    (hit, *_) = run(hits(url, "where is the water meter", "etag"))
    assert hit.citation.source == f"s3://{BUCKET}/etag/meter.md"


def test_a_prefix_enqueued_then_synced_fetches_only_what_changed(live):
    """``poolq enqueue`` of a prefix records what a sync compares (URI, tag, bytes' hash): the
    first sync after it fetches the 2 objects changed and the 1 added of 33, counted by the S3
    server's request log, and parses nothing else."""
    url, server, s3, _ = live
    key = lambda i: f"first/{i:02d}.md"  # noqa: E731
    for i in range(33):
        s3.put_object(Bucket=BUCKET, Key=key(i), Body=f"# Shelf {i}\n\nBox {i} is here.".encode())
    r = poolq("enqueue", f"s3://{BUCKET}/first/", "--collection", "first", "--wait",
              "--redis-url", url)  # fmt: skip
    assert r.returncode == 0, r.stderr
    s3.put_object(Bucket=BUCKET, Key=key(4), Body=b"# Shelf 4\n\nBox 4 moved to the loft.")
    s3.put_object(Bucket=BUCKET, Key=key(20), Body=b"# Shelf 20\n\nBox 20 went to the tip.")
    s3.put_object(Bucket=BUCKET, Key=key(33), Body=b"# Shelf 33\n\nA new box of cables.")
    server.log.clear()
    synced, progress = run(sync(url, "first/", "first"))
    assert sorted(server.object_gets(BUCKET, "first/")) == [key(4), key(20), key(33)]
    assert (synced.new, synced.changed, synced.unchanged, synced.metadata_only) == (1, 2, 31, 0)
    assert (synced.listed, synced.fetched, progress.parsed, synced.removed) == (34, 3, 3, 0)
    (hit, *_) = run(hits(url, "where did box 4 go", "first"))
    assert hit.citation.source == f"s3://{BUCKET}/{key(4)}" and "loft" in hit.text


def test_objects_enqueued_by_url_list_are_synced_without_a_fetch(live, tmp_path):
    """A URL list records each object's URI and tag but no path under a prefix: the first sync
    of their prefix writes the path into their metadata in place and fetches none of them."""
    url, server, s3, _ = live
    for name in ("a", "b"):
        s3.put_object(Bucket=BUCKET, Key=f"listed/{name}.md", Body=f"# {name}\n\nNote.".encode())
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"s3://{BUCKET}/listed/{n}.md\n" for n in ("a", "b")))
    r = poolq("enqueue", str(urls), "--urls", "--collection", "listed", "--wait",
              "--redis-url", url)  # fmt: skip
    assert r.returncode == 0, r.stderr
    server.log.clear()
    synced, _ = run(sync(url, "listed/", "listed"))
    assert server.object_gets(BUCKET, "listed/") == []
    assert (synced.metadata_only, synced.new, synced.fetched, synced.encoded_chunks) == (2, 0, 0, 0)
    again, _ = run(sync(url, "listed/", "listed"))
    assert (again.unchanged, again.metadata_only, again.fetched) == (2, 0, 0)


def test_uris_outside_the_allowed_prefixes_are_refused_unfetched(live):
    """The worker's source_uris is s3://team-docs/: another bucket, a look-alike bucket name and
    a web address are refused (forbidden, naming the setting), and none is requested."""
    url, server, _, _ = live
    docs = [
        {"id": "other", "uri": "s3://other-bucket/a.md"},
        {"id": "lookalike", "uri": f"s3://{BUCKET}-copy/a.md"},
        {"id": "metadata", "uri": "http://169.254.169.254/latest/meta-data/"},
    ]
    server.log.clear()

    async def go():
        async with PoolqClient(url) as client:
            return (await client.wait(await client.enqueue("refused", docs), timeout_s=60))[0]

    outcome = run(go())
    assert {e.id: e.code for e in outcome.result.errors} == dict.fromkeys(
        ("other", "lookalike", "metadata"), ErrorCode.FORBIDDEN
    )
    assert all("source_uris" in e.error for e in outcome.result.errors)
    assert [p for _, p in server.log if "a.md" in p] == []
