"""Documents at web URLs, through httpx: timeouts, at most ``MAX_REDIRECTS`` redirects, the
byte limit (``--max-file-bytes``) enforced while reading, and a user agent naming poolq.

A 404 or 410 is :class:`ObjectGone`; 429, 5xx, timeouts and broken connections are retried with
backoff and jitter (``retry.py``); any other answer, too many redirects and a body over the
limit are the document's error. ``timeout_s`` (the setting ``http_timeout_s``, default 30)
bounds each read and the whole of one try.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx

from poolq.wire.backoff import Backoff
from poolq.wire.records.codes import ErrorCode
from poolq.wire.version import __version__
from poolq.worker.fetch.errors import FetchRefused, ObjectGone, Transient
from poolq.worker.fetch.objects import Fetched
from poolq.worker.fetch.retry import default_backoff, retried

MAX_REDIRECTS = 5
USER_AGENT = f"poolq/{__version__} (document ingestion; +https://github.com/poolq/poolq)"
RETRIED_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
DEFAULT_TIMEOUT_S = 30.0


class WebFetcher:
    """``allowed(url)``: whether a redirect may lead there (None: anywhere); a redirect out of
    what the worker may fetch is the document's error, unrequested."""

    def __init__(
        self, backoff: Backoff | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
        allowed: Callable[[str], bool] | None = None,
    ) -> None:  # fmt: skip
        self.backoff = backoff or default_backoff()
        self.timeout_s = timeout_s
        self.allowed = allowed
        self._client: httpx.AsyncClient | None = None

    async def _check(self, request: httpx.Request) -> None:
        if self.allowed is not None and not self.allowed(str(request.url)):
            raise FetchRefused(
                str(request.url), "redirected outside the URIs this worker may fetch "
                "(source_uris, POOLQ_SOURCE_URIS)", ErrorCode.FORBIDDEN,
            )  # fmt: skip

    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                follow_redirects=True, max_redirects=MAX_REDIRECTS,
                timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
                headers={"User-Agent": USER_AGENT}, trust_env=False,
                event_hooks={"request": [self._check]},
            )  # fmt: skip
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def get(self, url: str, max_bytes: int) -> Fetched:
        async def once() -> Fetched:
            try:
                return await asyncio.wait_for(self._once(url, max_bytes), self.timeout_s)
            except TimeoutError:
                raise Transient(url, f"no complete answer within {self.timeout_s:g}s") from None

        return await retried(self.backoff, once)

    async def _once(self, url: str, max_bytes: int) -> Fetched:
        try:
            async with self.client().stream("GET", url) as r:
                if r.status_code in (404, 410):
                    raise ObjectGone(url, f"HTTP {r.status_code}")
                if r.status_code in RETRIED_STATUSES:
                    raise Transient(url, f"HTTP {r.status_code}")
                if r.status_code >= 400:
                    raise FetchRefused(url, f"HTTP {r.status_code}")
                length = r.headers.get("content-length", "")
                if length.isdigit() and int(length) > max_bytes:
                    raise self._too_large(url, int(length), max_bytes)
                body = bytearray()
                async for piece in r.aiter_bytes():
                    body += piece
                    if len(body) > max_bytes:
                        raise self._too_large(url, len(body), max_bytes, at_least=True)
                tag = r.headers.get("etag") or r.headers.get("last-modified")
                return Fetched(url, bytes(body), tag)
        except httpx.TooManyRedirects:
            raise FetchRefused(url, f"more than {MAX_REDIRECTS} redirects") from None
        except httpx.TimeoutException:
            raise Transient(url, f"timed out (after {self.timeout_s:g}s)") from None
        except httpx.TransportError as e:  # refused, reset, broken mid-body
            raise Transient(url, f"connection failed ({type(e).__name__})") from None

    @staticmethod
    def _too_large(url: str, size: int, limit: int, at_least: bool = False) -> FetchRefused:
        more = "more than " if at_least else ""
        return FetchRefused(
            url, f"{more}{size} bytes, over the limit of {limit} bytes per file (--max-file-bytes)",
            ErrorCode.TOO_LARGE,
        )  # fmt: skip
