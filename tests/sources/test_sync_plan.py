"""A store sync's plan, page by page: each object compared on its own with the stored
documents (no timestamp watermark), deletions settled up to each page's last key, and the
retry's backoff with jitter bounded by its budget."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from poolq.sinks.inventory import StoredDocument
from poolq.wire.backoff import Backoff
from poolq.wire.uris import parse_uri
from poolq.worker.fetch.errors import SourceUnavailable, Transient
from poolq.worker.fetch.objects import ListedObject
from poolq.worker.fetch.retry import retried
from poolq.worker.reindex.objects import StoredUnder, metadata_hash, object_metadata, plan_page

PREFIX = parse_uri("s3://b/docs/")


def obj(key: str, etag: str = '"e1"') -> ListedObject:
    return ListedObject(f"docs/{key}", f"s3://b/docs/{key}", 10, etag, None)


def stored(
    *objects: ListedObject, version: str = "v1", metadata: dict | None = None
) -> dict[str, StoredDocument]:
    """As the inventory reads them: chunk 0's metadata hash and its ``metadata.tag``."""
    out = {}
    for o in objects:
        meta_hash = metadata_hash(metadata or object_metadata(PREFIX, o))
        out[o.uri] = StoredDocument(o.uri, "h", meta_hash, version, 2, tag=o.tag)
    return out


def test_objects_that_share_a_timestamp_are_compared_one_by_one():
    a, b, c = obj("a.md"), obj("b.md"), obj("c.md")
    have = stored(a, b, c)
    b2 = obj("b.md", '"e2"')  # changed, at the same second as the others
    plan = plan_page([a, b2, c], StoredUnder(have, PREFIX), PREFIX, "v1", after=None)
    assert [o.key for o in plan.unchanged] == ["docs/a.md", "docs/c.md"]
    assert [o.key for o in plan.to_fetch] == ["docs/b.md"] and plan.removed == []


def test_an_object_with_its_tag_but_other_metadata_is_relabeled_unfetched():
    """An object enqueued by URI (no path), or under another prefix, records its tag: a sync
    rewrites its metadata in place and fetches nothing; another tag is fetched."""
    a, b = obj("a.md"), obj("b.md")
    have = {
        **stored(a, metadata={"uri": a.uri, "tag": a.tag}),
        **stored(b, metadata={"uri": b.uri, "tag": '"old"'}),
    }
    have[b.uri] = replace(have[b.uri], tag='"old"')
    plan = plan_page([a, b], StoredUnder(have, PREFIX), PREFIX, "v1", after=None)
    assert plan.unchanged == [] and [o.key for o in plan.to_fetch] == ["docs/b.md"]
    ((was, meta),) = plan.relabeled
    assert was.doc_id == a.uri and meta == {"uri": a.uri, "path": "a.md", "tag": '"e1"'}


def test_deletions_are_settled_page_by_page_in_key_order():
    a, b, c, d, e = (obj(f"{k}.md") for k in "abcde")
    elsewhere = ListedObject("other/x.md", "s3://b/other/x.md", 10, '"e1"', None)
    under = StoredUnder({**stored(a, b, c, d, e), **stored(elsewhere)}, PREFIX)
    first = plan_page([a, c], under, PREFIX, "v1", after=None)
    assert [s.doc_id for s in first.removed] == ["s3://b/docs/b.md"]  # not d, e: later pages
    second = plan_page([e], under, PREFIX, "v1", after=c.uri)
    assert [s.doc_id for s in second.removed] == ["s3://b/docs/d.md"]
    assert under.removed_through(e.uri, None, set()) == []  # nothing past the last key


def test_other_profile_versions_and_full_rebuilds_fetch_and_non_documents_are_left_out():
    a = obj("a.md")
    under = StoredUnder(stored(a, version="v0"), PREFIX)
    plan = plan_page([a, obj("logo.png")], under, PREFIX, "v1", after=None)
    assert [o.key for o in plan.to_fetch] == ["docs/a.md"]
    assert [(o.key, why) for o, why in plan.left_out] == [("docs/logo.png", "not a document")]
    full = plan_page([a], StoredUnder(stored(a), PREFIX), PREFIX, "v1", after=None, full=True)
    assert full.to_fetch == [a]


def test_backoff_retries_transient_failures_then_gives_up_within_its_budget():
    tries = []

    async def flaky():
        tries.append(time.monotonic())
        if len(tries) < 3:
            raise Transient("s3://b/k", "HTTP 503")
        return "ok"

    assert asyncio.run(retried(Backoff(base_s=0.01, cap_s=0.05, budget_s=5), flaky)) == "ok"
    assert len(tries) == 3

    async def down():
        raise Transient("s3://b/k", "connection refused")

    t0 = time.monotonic()
    with pytest.raises(SourceUnavailable, match=r"connection refused.*still failing after 0\.3s"):
        asyncio.run(retried(Backoff(base_s=0.01, cap_s=0.05, budget_s=0.3), down))
    assert time.monotonic() - t0 >= 0.25  # it retried for its budget
    waits = [Backoff(base_s=1, cap_s=4).wait_s(10) for _ in range(200)]
    assert all(0 <= w <= 4 for w in waits) and len(set(waits)) > 100  # jittered, capped
