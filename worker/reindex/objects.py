"""A sync of a collection with a bucket's prefix, planned a listing page at a time (the job that
carries it out is ``worker/app/jobs/reindex_objects.py``).

Each object is compared on its own with what the collection holds for its URI (no "modified
since" watermark: objects that share a timestamp are never missed):

* **unchanged**: the stored document carries the same tag (version id, else ETag: opaque, only
  compared for equality) and profile version: neither fetched nor parsed. Its metadata (URI,
  path under the prefix, tag) is rewritten in place, still unfetched, when it differs (an
  object enqueued by URI, or under another prefix, records no path or another);
* otherwise the object is fetched; when its bytes hash as the stored ``file_hash`` it is
  unchanged in content (a copy, a multipart re-upload) and only its metadata (the tag) is
  updated; else it is parsed and encoded (**new** or **changed**);
* **deleted**: a stored document of the prefix whose URI no page lists. Listings come in key
  order, so each page settles the stored URIs up to its last key, and nothing of the listing
  is held past its page.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from poolq.sinks.inventory import StoredDocument
from poolq.wire.documents import Document
from poolq.wire.uris import SourceUri, chosen
from poolq.worker.fetch.errors import FetchError, SourceUnavailable
from poolq.worker.fetch.fetcher import Fetcher
from poolq.worker.fetch.objects import Fetched, ListedObject

IN_FLIGHT = 64  # objects fetched at once


def object_metadata(prefix: SourceUri, obj: ListedObject) -> dict[str, Any]:
    """What a synced object's points carry as metadata: its URI, path under the prefix, tag."""
    return {"uri": obj.uri, "path": prefix.relative(obj.key), "tag": obj.tag}


def metadata_hash(metadata: dict[str, Any]) -> str:
    return Document("-", "-", metadata).metadata_hash


@dataclass
class PagePlan:
    unchanged: list[ListedObject] = field(default_factory=list)
    to_fetch: list[ListedObject] = field(default_factory=list)
    # unchanged objects whose stored metadata is not the sync's: (stored, the metadata to set)
    relabeled: list[tuple[StoredDocument, dict[str, Any]]] = field(default_factory=list)
    left_out: list[tuple[ListedObject, str]] = field(default_factory=list)  # (object, why)
    removed: list[StoredDocument] = field(default_factory=list)


class StoredUnder:
    """The collection's documents under one prefix, by URI in key order: which of them a page
    of the listing settles (present or deleted)."""

    def __init__(self, stored: Mapping[str, StoredDocument], prefix: SourceUri) -> None:
        base = prefix.object_uri(prefix.key)
        self.stored = {k: v for k, v in stored.items() if k.startswith(base)}
        self.ids = sorted(self.stored)

    def removed_through(self, after: str | None, last: str | None, seen: set[str]) -> list[str]:
        """Stored URIs after ``after`` up to ``last`` (None: to the end) that ``seen`` lacks."""
        lo = 0 if after is None else bisect.bisect_right(self.ids, after)
        hi = len(self.ids) if last is None else bisect.bisect_right(self.ids, last)
        return [i for i in self.ids[lo:hi] if i not in seen]


def plan_page(
    page: Sequence[ListedObject],
    stored: StoredUnder,
    prefix: SourceUri,
    version: str,
    *,
    after: str | None,
    full: bool = False,
) -> PagePlan:
    """One listing page against the stored documents (``after``: the URI the last page ended
    at). A full rebuild fetches every object it reads."""
    plan = PagePlan()
    seen: set[str] = set()
    for obj in page:
        if why := chosen(prefix.relative(obj.key)):
            plan.left_out.append((obj, why))
            continue
        seen.add(obj.uri)
        have = stored.stored.get(obj.uri)
        if full or have is None or have.profile_version != version or have.tag != obj.tag:
            plan.to_fetch.append(obj)
            continue
        meta = object_metadata(prefix, obj)
        if have.meta_hash == metadata_hash(meta):
            plan.unchanged.append(obj)
        else:
            plan.relabeled.append((have, meta))
    last = page[-1].uri if page else after
    plan.removed = [stored.stored[i] for i in stored.removed_through(after, last, seen)]
    return plan


async def fetch_each(
    fetcher: Fetcher,
    objects: Sequence[ListedObject],
    max_bytes: int,
    handle: Callable[[ListedObject, Fetched | FetchError], Awaitable[None]],
    in_flight: int = IN_FLIGHT,
) -> None:
    """Fetch each object, ``in_flight`` at a time, and ``handle(object, bytes or its fetch
    error)`` while still holding its slot (so at most ``in_flight`` objects' bytes are held: a
    slow parse slows the fetches down). An object store that stays down
    (:class:`~poolq.worker.fetch.errors.SourceUnavailable`) cancels the rest and is raised."""
    room = asyncio.Semaphore(in_flight)

    async def one(obj: ListedObject) -> None:
        async with room:
            got: Fetched | FetchError
            try:
                got = await fetcher.objects.get(_uri(obj), max_bytes)
            except SourceUnavailable:
                raise
            except FetchError as e:
                got = e
            await handle(obj, got)

    try:
        async with asyncio.TaskGroup() as group:
            for obj in objects:
                group.create_task(one(obj))
    except BaseExceptionGroup as eg:
        raise eg.exceptions[0] from None


def _uri(obj: ListedObject) -> SourceUri:
    scheme, _, rest = obj.uri.partition("://")
    bucket = rest.split("/", 1)[0]
    return SourceUri(scheme, bucket, obj.key, obj.uri)
