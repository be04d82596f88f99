"""One page of a store sync fetched and read (``reindex_objects.py`` runs the sync): each object
fetched (``worker/fetch/``), those whose bytes did not change set aside for a tag update, the
rest parsed in the sync's parse children into documents that carry their layout. A 404 is an
object deleted since it was listed (removed, if it was stored); an object that cannot be fetched
or parsed is a document error with its code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from poolq.sinks.inventory import StoredDocument
from poolq.wire.documents import Document, DocumentError, validate_document
from poolq.wire.uris import SourceUri
from poolq.worker.fetch.errors import FetchError, ObjectGone
from poolq.worker.fetch.fetcher import Fetcher
from poolq.worker.fetch.objects import Fetched, ListedObject
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.layout import file_hash, parsed_document
from poolq.worker.parse.sandbox import ParsePool
from poolq.worker.reindex.objects import fetch_each, object_metadata


class PageRead:
    """What one page did: documents to encode, tags to update, deletions, errors."""

    def __init__(self) -> None:
        self.docs: list[Document] = []
        self.kinds: dict[str, str] = {}  # doc id -> new, changed or stale
        self.tags: list[tuple[StoredDocument, dict[str, Any]]] = []
        self.gone: list[StoredDocument] = []
        self.errors: list[DocumentError] = []
        self.fetched = self.parsed = self.pages = 0


async def fetch_and_parse(
    fetcher: Fetcher, pool: ParsePool, objects: list[ListedObject],
    stored: dict[str, StoredDocument], prefix: SourceUri, version: str, max_bytes: int, full: bool,
    tick: Callable[[PageRead], Awaitable[None]],
) -> PageRead:  # fmt: skip
    page = PageRead()
    parse_room = asyncio.Semaphore(2 * pool.workers)

    async def handle(obj: ListedObject, got: Fetched | FetchError) -> None:
        have = stored.get(obj.uri)
        if isinstance(got, ObjectGone):  # deleted since it was listed: not an error
            if have is not None:
                page.gone.append(have)
            return
        if isinstance(got, FetchError):
            page.errors.append(DocumentError(obj.uri, "uri", got.message, got.code))
            return
        page.fetched += 1
        await tick(page)
        hashed = file_hash(got.data)
        meta = object_metadata(prefix, obj)
        same_bytes = have is not None and have.file_hash == hashed
        if not full and same_bytes and have is not None and have.profile_version == version:
            page.tags.append((have, meta))
            return
        async with parse_room:
            try:
                parsed = await pool.parse(got.data, prefix.relative(obj.key))
            except ParseError as e:
                page.errors.append(
                    DocumentError(obj.uri, "file", f"{obj.uri}: {e.message}", e.code)
                )
                return
        raw = parsed_document(obj.uri, parsed, source=obj.uri, metadata=meta, hashed=hashed)
        doc = validate_document(raw, 0)
        if isinstance(doc, DocumentError):
            page.errors.append(doc)
            return
        page.docs.append(doc)
        page.parsed += 1
        page.pages += parsed.pages or 0
        await tick(page)
        page.kinds[doc.id] = "new" if have is None else "stale" if same_bytes else "changed"

    await fetch_each(fetcher, objects, max_bytes, handle)
    return page
