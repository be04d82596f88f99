"""Files become documents one way, for the parse job, a folder's reindex and an object-store
sync: a file document's bytes got within what the worker allows (sent with it; read by path
under ``source_roots``; fetched by URI under ``source_uris``), hashed, compared with the hash the
collection holds (the same bytes are not parsed again), parsed in the worker's parse children
(``sandbox.py``) and made a document that carries its layout (``layout.py``).

What a document may make the worker read is confined (docs/operations.md, "Security"):

* a path, or a ``file://`` URI, is read only when it resolves (``..`` and symlinks followed)
  inside one of ``source_roots``; with none set, every such document is refused;
* a URI is fetched only under a prefix of ``source_uris``; with none set, every one is refused.

Both refusals carry the code ``forbidden`` and name the setting; bytes sent with the document
need neither. A document fetched from an object store records what a sync compares
(``worker/reindex/objects.py``): its URI and tag (version id, else ETag) in ``metadata``, its
bytes' hash in ``file_hash``, so the first sync of its prefix fetches only what changed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from poolq.wire.backoff import Backoff
from poolq.wire.documents import Document, DocumentError, validate_document
from poolq.wire.files import FileDocument
from poolq.wire.records.codes import ErrorCode
from poolq.wire.uris import is_uri, parse_uri
from poolq.worker.fetch.errors import FetchError, ObjectGone, SourceUnavailable
from poolq.worker.parse.errors import ParseError
from poolq.worker.parse.layout import file_hash, parsed_document
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.sandbox import ParsePool

if TYPE_CHECKING:
    from poolq.worker.fetch.fetcher import Fetcher

NO_ROOTS = (
    "a document given by path is refused: this worker has no source_roots (set source_roots "
    "in its config, POOLQ_SOURCE_ROOTS or --source-roots to the folders it may read, or send "
    "the file's bytes)"
)
OUTSIDE_ROOTS = (
    "outside the folders this worker may read (source_roots, POOLQ_SOURCE_ROOTS, --source-roots)"
)
NO_URIS = (
    "a document given by URI is refused: this worker has no source_uris (set source_uris in "
    "its config or POOLQ_SOURCE_URIS to the prefixes it may fetch)"
)
OUTSIDE_URIS = "outside the URIs this worker may fetch (source_uris, POOLQ_SOURCE_URIS)"


class Forbidden(ValueError):
    """A document names what the worker may not read (the message names the setting)."""

    code = ErrorCode.FORBIDDEN


def split_uris(source_uris: str | None) -> tuple[str, ...]:
    """``source_uris`` (separated by spaces or commas) as prefixes."""
    return tuple(u for u in (source_uris or "").replace(",", " ").split() if u)


def uri_allowed(uri: str, allowed: Sequence[str]) -> bool:
    """Whether ``uri`` is one of ``allowed`` or under one (a prefix ends at a ``/``: ``s3://a``
    allows ``s3://a/x``, never ``s3://ab/x``)."""
    return any(uri == a or uri.startswith(a if a.endswith("/") else a + "/") for a in allowed)


def read_confined(path: str, roots: Sequence[Path], max_bytes: int) -> bytes:
    """The bytes of ``path`` when it resolves inside one of ``roots``, within ``max_bytes``
    (checked before reading): else :class:`Forbidden`, or :class:`ParseError`."""
    if not roots:
        raise Forbidden(NO_ROOTS)
    real = Path(path).resolve()  # '..' and every symlink followed: where the bytes really are
    if not any(real.is_relative_to(r) for r in roots):
        raise Forbidden(OUTSIDE_ROOTS)
    try:  # the resolved path, and no symlink put there since
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > max_bytes:
                raise ParseError(
                    ErrorCode.TOO_LARGE,
                    f"{size} bytes, over the limit of {max_bytes} bytes per file",
                )
            return fh.read(max_bytes + 1)
    except OSError as e:
        raise ParseError(ErrorCode.CORRUPT, f"cannot be read ({e.strerror or e})") from None


@dataclass(frozen=True)
class Parsed:
    """A file parsed: the ingest job's document (``raw``), its pages, its bytes' hash, and the
    errors of its pages that OCR could not read (the rest of the file landed)."""

    raw: dict[str, Any]
    pages: int
    hashed: str
    page_errors: tuple[DocumentError, ...] = ()

    def document(self) -> Document | DocumentError:
        return validate_document(self.raw, 0)


class SameBytes:
    """The file's bytes hash as the collection's copy (``file_hash``): not parsed again."""


def _why(e: Exception) -> str:
    if isinstance(e, FetchError):
        return f"cannot be fetched: {e.message}"
    return e.message if isinstance(e, ParseError) else str(e)


def _code(e: Exception) -> ErrorCode:
    """A 404 is ``corrupt`` here: the document names one object, and it is not there."""
    if isinstance(e, ObjectGone):
        return ErrorCode.CORRUPT
    code = getattr(e, "code", None)
    return code if isinstance(code, ErrorCode) else ErrorCode.BAD_REQUEST


def allowed(
    settings: Any, scheduled: Sequence[str] = ()
) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """The folders (resolved) and the URI prefixes a worker may read: its ``source_roots`` and
    ``source_uris``, and the sources its own config schedules (``scheduled``: folders, files
    and prefixes a reindex reads)."""
    roots = [
        *(settings.source_roots or "").split(os.pathsep),
        *(s for s in scheduled if not is_uri(s)),
    ]
    uris = [*split_uris(settings.source_uris), *(s for s in scheduled if is_uri(s))]
    return tuple(Path(r).resolve() for r in roots if r), tuple(uris)


class FileReader:
    """Turns file documents into documents (see the module docstring) in ``pool``."""

    def __init__(
        self, pool: ParsePool, *, roots: Sequence[Path] = (), uris: Sequence[str] = (),
        max_file_bytes: int, retry_s: float = 120.0, http_timeout_s: float = 30.0,
    ) -> None:  # fmt: skip
        self.pool = pool
        self.roots, self.uris = tuple(roots), tuple(uris)
        self.max_file_bytes = max_file_bytes
        self.retry_s, self.http_timeout_s = retry_s, http_timeout_s
        self._fetcher: Fetcher | None = None

    @classmethod
    def open(cls, settings: Any, *, scheduled: Sequence[str] = ()) -> FileReader:
        """A reader with parse children of its own, as a role's ``settings`` say (the parse
        and the encode settings share the names: ``parse_workers``, ``parse_timeout_s``,
        ``parse_memory_mb``, ``ocr``, ``parse_child``, ``max_file_bytes``, ``source_roots``,
        ``source_uris``, ``source_retry_s``, ``http_timeout_s``; ``scheduled``: see
        :func:`allowed`)."""
        limits = ParseLimits(
            max_file_bytes=settings.max_file_bytes, timeout_s=settings.parse_timeout_s,
            memory_mb=settings.parse_memory_mb, ocr=settings.ocr,
        )  # fmt: skip
        roots, uris = allowed(settings, scheduled)
        return cls(
            ParsePool(settings.parse_workers, limits, settings.parse_child), roots=roots,
            uris=uris, max_file_bytes=settings.max_file_bytes, retry_s=settings.source_retry_s,
            http_timeout_s=settings.http_timeout_s,
        )  # fmt: skip

    def fetcher(self) -> Fetcher:
        """The object stores' and the web's client (the sources extra: imported when a URI
        comes; :class:`ParseError` naming the extra when it is not installed)."""
        if self._fetcher is None:
            try:
                from poolq.worker.fetch.fetcher import Fetcher
            except ImportError as e:
                raise ParseError(
                    ErrorCode.UNSUPPORTED, f"this worker cannot fetch URIs ({e.name} is not "
                    "installed: pip install 'poolq[sources]')",
                ) from None  # fmt: skip
            self._fetcher = Fetcher(
                Backoff(budget_s=self.retry_s), http_timeout_s=self.http_timeout_s,
                allowed=lambda url: uri_allowed(url, self.uris),
            )  # fmt: skip
        return self._fetcher

    async def document(
        self, f: FileDocument, *, known_hash: str | None = None,
        on_page: Callable[[], None] | None = None,
    ) -> Parsed | SameBytes | DocumentError:  # fmt: skip
        """``f``'s document, :class:`SameBytes` when its bytes hash as ``known_hash``, or its
        error (naming the file, with its code); ``on_page()`` after each page OCR'd. An object
        store or web server down past the retries raises
        :class:`~poolq.worker.fetch.errors.SourceUnavailable`: the job is retried."""
        field = "uri" if f.uri is not None else "path" if f.data is None else "file"
        metadata = f.metadata
        try:
            if f.uri is not None:
                data, tag = await self._fetch(f.uri)
                if parse_uri(f.uri).is_object_store:  # what a sync of its prefix compares
                    metadata = {**metadata, "uri": f.uri, **({"tag": tag} if tag else {})}
            elif f.data is not None:
                data = f.data
            else:
                assert f.path is not None
                data = await self._read(f.path)
        except SourceUnavailable:
            raise
        except (Forbidden, ParseError, FetchError) as e:
            return DocumentError(f.id, field, f"{f.source}: {_why(e)}", _code(e))
        hashed = file_hash(data)
        if known_hash is not None and hashed == known_hash:
            return SameBytes()
        try:
            parsed = await self.pool.parse(data, f.source, on_page)
        except ParseError as e:
            return DocumentError(f.id, "file", f"{f.source}: {e.message}", e.code)
        raw = parsed_document(f.id, parsed, source=f.source, metadata=metadata, hashed=hashed)
        lost = tuple(
            DocumentError(f.id, f"page {page}", f"{f.source}: {message}", ErrorCode(code))
            for page, code, message in parsed.page_errors
        )
        return Parsed(raw, parsed.pages or 0, hashed, lost)

    async def _read(self, path: str) -> bytes:
        return await asyncio.to_thread(read_confined, path, self.roots, self.max_file_bytes)

    async def _fetch(self, uri: str) -> tuple[bytes, str | None]:
        """The bytes and tag of a document given by URI (``file://``: read as a path, under
        the roots)."""
        parsed = parse_uri(uri)
        if parsed.scheme == "file":
            return await self._read("/" + parsed.key), None
        if not self.uris:
            raise Forbidden(NO_URIS)
        if not uri_allowed(uri, self.uris):
            raise Forbidden(OUTSIDE_URIS)
        got = await self.fetcher().fetch(uri, self.max_file_bytes)
        return got.data, got.tag

    async def close(self) -> None:
        if self._fetcher is not None:
            await self._fetcher.close()
            self._fetcher = None
        await self.pool.close()
