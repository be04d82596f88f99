"""Listing and fetching a bucket prefix against a real S3 API (moto's server on this machine):
credentials from the standard environment only, a 404 for an object deleted since it was listed,
the size limit, and the store taken down and brought back mid-fetch (every object once)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from poolq.wire.backoff import Backoff
from poolq.wire.object_store_config import s3_config
from poolq.wire.records.codes import ErrorCode
from poolq.wire.uris import parse_uri
from poolq.worker.fetch.errors import FetchRefused, ObjectGone, SourceUnavailable
from poolq.worker.fetch.fetcher import Fetcher
from poolq.worker.fetch.objects import ObjectStores
from poolq.worker.reindex.objects import fetch_each
from tests.sources.s3_server import SECRET

pytestmark = pytest.mark.slow
BUCKET = "poolq-docs"


def fill(server, n=12, prefix="manuals/"):
    c = server.bucket(BUCKET)
    for i in range(n):
        c.put_object(
            Bucket=BUCKET, Key=f"{prefix}{i:03d}.md", Body=f"# Doc {i}\n\nBody {i}.".encode()
        )
    c.put_object(Bucket=BUCKET, Key="other/x.md", Body=b"# elsewhere")
    return c


async def list_all(stores, uri, page_objects=5, after=None):
    out = []
    async for page in stores.pages(parse_uri(uri), after=after, page_objects=page_objects):
        assert len(page) <= page_objects
        out += page
    return out


def test_a_prefix_is_listed_in_pages_and_each_object_fetched(s3_server):
    fill(s3_server)
    stores = ObjectStores(Backoff(budget_s=5))
    listed = asyncio.run(list_all(stores, f"s3://{BUCKET}/manuals/"))
    assert [o.key for o in listed] == [f"manuals/{i:03d}.md" for i in range(12)]
    assert all(o.uri == f"s3://{BUCKET}/{o.key}" and o.etag and o.size > 0 for o in listed)
    # resumed after a key: nothing before it again
    rest = asyncio.run(list_all(stores, f"s3://{BUCKET}/manuals/", after="manuals/009.md"))
    assert [o.key for o in rest] == ["manuals/010.md", "manuals/011.md"]
    got = asyncio.run(Fetcher(Backoff(budget_s=5)).fetch(f"s3://{BUCKET}/manuals/003.md", 1000))
    assert got.data == b"# Doc 3\n\nBody 3." and got.tag == listed[3].etag


def test_credentials_come_from_the_standard_environment(s3_server, monkeypatch, tmp_path):
    """AWS_ENDPOINT_URL=http://... works with no other setting; a profile's keys are read from
    the shared credentials file when the environment has none; no secret is ever in a message."""
    fill(s3_server, 2)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    creds = tmp_path / "credentials"
    creds.write_text(
        f"[ingest]\naws_access_key_id = from-profile\naws_secret_access_key = {SECRET}\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_PROFILE", "ingest")
    config = s3_config()
    assert config["access_key_id"] == "from-profile" and config["endpoint"] == s3_server.endpoint
    listed = asyncio.run(list_all(ObjectStores(Backoff(budget_s=5)), f"s3://{BUCKET}/manuals/"))
    assert len(listed) == 2
    with pytest.raises(ObjectGone) as e:
        asyncio.run(Fetcher(Backoff(budget_s=5)).fetch(f"s3://{BUCKET}/manuals/nope.md", 1000))
    assert SECRET not in str(e.value) and "from-profile" not in str(e.value)


def test_a_404_and_an_object_over_the_limit(s3_server):
    c = fill(s3_server, 3)
    fetcher = Fetcher(Backoff(budget_s=5))
    objects = asyncio.run(list_all(fetcher.objects, f"s3://{BUCKET}/manuals/"))
    c.delete_object(Bucket=BUCKET, Key="manuals/001.md")  # deleted since it was listed
    c.put_object(Bucket=BUCKET, Key="manuals/002.md", Body=b"x" * 5000)
    seen: dict[str, object] = {}

    async def handle(obj, got):
        seen[obj.key] = got

    asyncio.run(fetch_each(fetcher, objects, 1000, handle))
    assert seen["manuals/000.md"].data.startswith(b"# Doc 0")
    assert isinstance(seen["manuals/001.md"], ObjectGone)
    big = seen["manuals/002.md"]
    assert isinstance(big, FetchRefused) and big.code == ErrorCode.TOO_LARGE
    assert "5000 bytes" in big.message and "--max-file-bytes" in big.message


def test_the_store_down_and_back_mid_fetch_every_object_once(s3_server):
    fill(s3_server, 40)
    fetcher = Fetcher(Backoff(base_s=0.1, cap_s=0.5, budget_s=30))
    objects = asyncio.run(list_all(fetcher.objects, f"s3://{BUCKET}/manuals/", page_objects=100))
    got: list[str] = []

    async def handle(obj, result):
        assert not isinstance(result, Exception), result
        got.append(obj.key)
        if len(got) == 5:  # the store goes away with 35 objects to go, and comes back
            s3_server.stop()
            threading.Timer(1.5, s3_server.start).start()

    t0 = time.monotonic()
    asyncio.run(fetch_each(fetcher, objects, 1000, handle, in_flight=4))
    assert sorted(got) == [o.key for o in objects] and len(set(got)) == 40
    assert time.monotonic() - t0 >= 1.0


def test_a_store_that_stays_down_is_unavailable_after_the_budget(s3_server):
    fill(s3_server, 2)
    s3_server.stop()
    fetcher = Fetcher(Backoff(base_s=0.05, cap_s=0.2, budget_s=1.0))
    with pytest.raises(SourceUnavailable, match=r"still failing after 1s of retries"):
        asyncio.run(list_all(fetcher.objects, f"s3://{BUCKET}/manuals/"))
    with pytest.raises(SourceUnavailable, match=r"still failing after 1s of retries"):
        asyncio.run(fetcher.fetch(f"s3://{BUCKET}/manuals/000.md", 1000))


class CountedBackoff(Backoff):
    """A backoff that counts its waits: each one is a retry."""

    waits: list[int]

    def wait_s(self, attempt: int) -> float:
        self.waits.append(attempt)
        return super().wait_s(attempt)


def test_a_missing_bucket_is_refused_at_once_not_retried(s3_server):
    backoff = CountedBackoff(budget_s=30)
    object.__setattr__(backoff, "waits", [])
    with pytest.raises(FetchRefused, match="no such bucket"):
        asyncio.run(list_all(ObjectStores(backoff), "s3://no-such-bucket/docs/"))
    assert backoff.waits == []  # refused on its first answer
    down = CountedBackoff(base_s=0.01, cap_s=0.02, budget_s=0.5)  # (the count can see retries)
    object.__setattr__(down, "waits", [])
    s3_server.stop()
    with pytest.raises(SourceUnavailable):
        asyncio.run(list_all(ObjectStores(down), "s3://no-such-bucket/docs/"))
    assert len(down.waits) >= 2
