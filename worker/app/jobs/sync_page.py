"""One page of a bucket sync fetched and read (``reindex_objects.py`` runs the sync): each object
fetched (``worker/fetch/``), then read by the sync's file reader (``parse/file_reader.py``):
those whose bytes did not change set aside for a tag update, the rest parsed into documents
that carry their layout. A 404 is an object deleted since it was listed (removed, if it was
stored); an object that cannot be fetched or parsed is a document error with its code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from poolq.sinks.inventory import StoredDocument
from poolq.wire.documents import Document, DocumentError
from poolq.wire.files import FileDocument
from poolq.wire.uris import SourceUri
from poolq.worker.fetch.errors import FetchError, ObjectGone
from poolq.worker.fetch.objects import Fetched, ListedObject
from poolq.worker.parse.file_reader import FileReader, SameBytes
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
    reader: FileReader, objects: list[ListedObject], stored: dict[str, StoredDocument],
    prefix: SourceUri, version: str, full: bool, tick: Callable[[PageRead], Awaitable[None]],
) -> PageRead:  # fmt: skip
    page = PageRead()

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
        meta = object_metadata(prefix, obj)
        same = not full and have is not None and have.profile_version == version
        file = FileDocument(obj.uri, got.data, None, obj.uri, meta)
        read = await reader.document(file, known_hash=have.file_hash if have and same else None)
        if isinstance(read, SameBytes):  # same bytes, new tag: only the metadata
            assert have is not None
            page.tags.append((have, meta))
            return
        doc = read if isinstance(read, DocumentError) else read.document()
        if isinstance(doc, DocumentError):
            page.errors.append(doc)
            return
        assert not isinstance(read, DocumentError)
        page.docs.append(doc)
        page.parsed += 1
        page.pages += read.pages
        await tick(page)
        stale = have is not None and have.file_hash == read.hashed
        page.kinds[doc.id] = "new" if have is None else "stale" if stale else "changed"

    await fetch_each(reader.fetcher(), objects, reader.max_file_bytes, handle)
    return page
