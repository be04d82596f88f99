"""A folder's files in a reindex: unchanged ones found by their bytes, the others parsed.

A file whose stored ``file_hash`` (``sha256(bytes):parser version``), metadata and profile
version all match is unchanged: it is neither parsed nor encoded. Every other file is parsed in
the worker's parse children (``parse/sandbox.py``, the same bounds as a parse job) into a
document that carries its layout, and then planned as any document is (``plan.py``: new,
changed, stale, metadata-only). A file that cannot be parsed is an error with its code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from poolq.sinks.inventory import StoredDocument
from poolq.wire.documents import Document, DocumentError, validate_document
from poolq.wire.sources import FolderFile
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.layout import file_hash, parsed_document
from poolq.worker.parse.sandbox import ParsePool


@dataclass
class FolderRead:
    docs: list[Document] = field(default_factory=list)  # parsed: new or changed files
    unchanged: set[str] = field(default_factory=set)  # ids of files neither parsed nor encoded
    errors: list[DocumentError] = field(default_factory=list)
    parsed: int = 0
    pages: int = 0


def _metadata_hash(f: FolderFile) -> str:
    return Document(f.id, "", {"path": f.rel}).metadata_hash


async def read_folder_files(
    files: Sequence[FolderFile],
    stored: Mapping[str, StoredDocument],
    version: str,
    pool: ParsePool,
) -> FolderRead:
    """Each file unchanged (by hash), parsed into a document, or an error."""
    out = FolderRead()
    room = asyncio.Semaphore(2 * pool.workers)

    async def one(f: FolderFile) -> None:
        async with room:
            try:
                data = await asyncio.to_thread(f.path.read_bytes)
            except OSError as e:
                out.errors.append(DocumentError(f.id, "path", f"cannot be read ({e.strerror})"))
                return
            hashed = file_hash(data)
            have = stored.get(f.id)
            if (
                have is not None
                and have.file_hash == hashed
                and have.profile_version == version
                and have.meta_hash == _metadata_hash(f)
            ):
                out.unchanged.add(f.id)
                return
            try:
                parsed = await pool.parse(data, f.path.name)
            except ParseError as e:
                out.errors.append(DocumentError(f.id, "file", f"{f.rel}: {e.message}", e.code))
                return
        raw = parsed_document(f.id, parsed, source=f.rel, metadata={"path": f.rel}, hashed=hashed)
        doc = validate_document(raw, 0)
        if isinstance(doc, DocumentError):
            out.errors.append(doc)
            return
        out.docs.append(doc)
        out.parsed += 1
        out.pages += parsed.pages or 0

    await asyncio.gather(*(one(f) for f in files))
    order = {f.id: i for i, f in enumerate(files)}
    out.docs.sort(key=lambda d: order[d.id])
    return out
