"""One entry point for fetching a document given by URI: an object store's object
(``objects.py``) or a web URL (``web.py``). A ``file://`` URI is no fetch: the parse stage reads
it as a path, under the worker's roots (``worker/parse/file_reader.py``)."""

from __future__ import annotations

from collections.abc import Callable

from poolq.wire.backoff import Backoff
from poolq.wire.uris import parse_uri
from poolq.worker.fetch.objects import Fetched, ObjectStores
from poolq.worker.fetch.retry import default_backoff
from poolq.worker.fetch.web import DEFAULT_TIMEOUT_S, WebFetcher


class Fetcher:
    """Fetches by scheme; holds the object store clients and the HTTP client of this process."""

    def __init__(
        self, backoff: Backoff | None = None, *, http_timeout_s: float = DEFAULT_TIMEOUT_S,
        allowed: Callable[[str], bool] | None = None,
    ) -> None:  # fmt: skip
        """``allowed``: where a web URL may redirect to (``web.py``)."""
        self.backoff = backoff or default_backoff()
        self.objects = ObjectStores(self.backoff)
        self.web = WebFetcher(self.backoff, http_timeout_s, allowed)

    async def fetch(self, uri: str, max_bytes: int) -> Fetched:
        parsed = parse_uri(uri)
        if parsed.is_object_store:
            return await self.objects.get(parsed, max_bytes)
        if parsed.scheme == "file":
            raise ValueError(f"{uri}: a file:// URI is read as a path, not fetched")
        return await self.web.get(uri, max_bytes)

    async def close(self) -> None:
        await self.web.close()
