"""A folder's files in a reindex: unchanged ones found by their bytes, the others parsed.

A file whose stored ``file_hash`` (``sha256(bytes):parser version``), metadata and profile
version all match is unchanged: it is neither parsed nor encoded. Every other file goes through
the worker's file reader (``parse/file_reader.py``: read under the worker's roots, parsed in its
parse children, the same bounds as a parse job) into a document that carries its layout, and
is then planned as any document is (``plan.py``: new, changed, stale, metadata-only). A file
that cannot be read or parsed is an error with its code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from poolq.sinks.inventory import StoredDocument
from poolq.wire.documents import Document, DocumentError
from poolq.wire.files import FileDocument
from poolq.wire.sources import FolderFile
from poolq.worker.parse.file_reader import FileReader, SameBytes


@dataclass
class FolderRead:
    docs: list[Document] = field(default_factory=list)  # parsed: new or changed files
    unchanged: set[str] = field(default_factory=set)  # ids of files neither parsed nor encoded
    errors: list[DocumentError] = field(default_factory=list)
    parsed: int = 0
    pages: int = 0


async def read_folder_files(
    files: Sequence[FolderFile],
    stored: Mapping[str, StoredDocument],
    version: str,
    reader: FileReader,
) -> FolderRead:
    """Each file unchanged (by hash), parsed into a document, or an error."""
    out = FolderRead()
    room = asyncio.Semaphore(2 * reader.pool.workers)  # files read into memory at once

    async def one(f: FolderFile) -> None:
        meta = {"path": f.rel}
        have = stored.get(f.id)
        same = (
            have is not None
            and have.profile_version == version
            and have.meta_hash == Document(f.id, "", meta).metadata_hash
        )
        file = FileDocument(f.id, None, str(f.path), f.rel, meta)
        async with room:
            got = await reader.document(file, known_hash=have.file_hash if have and same else None)
        if isinstance(got, SameBytes):
            out.unchanged.add(f.id)
            return
        doc = got if isinstance(got, DocumentError) else got.document()
        if isinstance(doc, DocumentError):
            out.errors.append(doc)
            return
        assert not isinstance(got, DocumentError)
        out.docs.append(doc)
        out.parsed += 1
        out.pages += got.pages

    await asyncio.gather(*(one(f) for f in files))
    order = {f.id: i for i, f in enumerate(files)}
    out.docs.sort(key=lambda d: order[d.id])
    return out
