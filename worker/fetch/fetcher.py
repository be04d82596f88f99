"""One entry point for fetching a document given by URI: an object store's object
(``objects.py``), a web URL (``web.py``) or a ``file://`` path (read here, within the limit)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from poolq.wire.backoff import Backoff
from poolq.wire.records.codes import ErrorCode
from poolq.wire.uris import parse_uri
from poolq.worker.fetch.errors import FetchRefused, ObjectGone
from poolq.worker.fetch.objects import Fetched, ObjectStores
from poolq.worker.fetch.retry import default_backoff
from poolq.worker.fetch.web import WebFetcher


def _read_file(uri: str, path: Path, max_bytes: int) -> Fetched:
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise FetchRefused(
                uri,
                f"{size} bytes, over the limit of {max_bytes} bytes per file",
                ErrorCode.TOO_LARGE,
            )
        return Fetched(uri, path.read_bytes(), None)
    except FileNotFoundError:
        raise ObjectGone(uri, "no such file") from None
    except OSError as e:
        raise FetchRefused(uri, f"cannot be read ({e.strerror or e})", ErrorCode.CORRUPT) from None


class Fetcher:
    """Fetches by scheme; holds the store clients and the HTTP client of this process."""

    def __init__(self, backoff: Backoff | None = None) -> None:
        self.backoff = backoff or default_backoff()
        self.objects = ObjectStores(self.backoff)
        self.web = WebFetcher(self.backoff)

    async def fetch(self, uri: str, max_bytes: int) -> Fetched:
        parsed = parse_uri(uri)
        if parsed.is_object_store:
            return await self.objects.get(parsed, max_bytes)
        if parsed.scheme == "file":
            return await asyncio.to_thread(_read_file, uri, Path("/" + parsed.key), max_bytes)
        return await self.web.get(uri, max_bytes)

    async def close(self) -> None:
        await self.web.close()
