"""Objects of an object store (S3 and S3-compatible ones, GCS, Azure), through obstore: listing a
prefix page by page, and fetching one object within a byte limit.

One store client per bucket, kept for the process (obstore's clients pool their connections).
A listing that fails midway starts again after the last key it returned, so a retry never lists
an object twice. obstore retries a failed request a few times itself; what still fails is
classified (``errors.py``) and retried here with backoff and jitter (``retry.py``).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import obstore
from obstore import store as stores
from obstore.exceptions import PermissionDeniedError, UnauthenticatedError

from poolq.wire.backoff import Backoff
from poolq.wire.object_store_config import allows_http, s3_config
from poolq.wire.records.codes import ErrorCode
from poolq.wire.uris import SourceUri
from poolq.worker.fetch.errors import FetchRefused, ObjectGone, Transient
from poolq.worker.fetch.retry import default_backoff, retried, unavailable

STATUS = re.compile(r"status code: (\d{3})")  # in obstore's messages: the object store's answer
PAGE_OBJECTS = 1000  # objects per listing page (S3 returns at most 1000 per request)
CLIENT_OPTIONS = {"timeout": "60s", "connect_timeout": "5s", "user_agent": "poolq"}
STORE_RETRIES = {"max_retries": 2, "retry_timeout": timedelta(seconds=10)}


@dataclass(frozen=True)
class ListedObject:
    """An object as a listing names it: its key, URI (the document's id), size and ETag or
    version id (opaque: only compared for equality)."""

    key: str
    uri: str
    size: int
    etag: str | None
    version: str | None

    @property
    def tag(self) -> str:
        """What says the object changed: its version id, else its ETag, else its size."""
        return self.version or self.etag or f"size {self.size}"


@dataclass(frozen=True)
class Fetched:
    uri: str
    data: bytes
    tag: str | None


def _classify(uri: str, exc: Exception) -> Exception:
    if isinstance(exc, FileNotFoundError):  # (obstore raises the built-in for a 404)
        return ObjectGone(uri, "not found (deleted since it was listed)")
    if isinstance(exc, PermissionDeniedError | UnauthenticatedError):
        return FetchRefused(
            uri, "access denied: check the object store's credentials in the environment"
        )
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    status = STATUS.search(str(exc))
    code = int(status.group(1)) if status else 0
    if code == 404:
        return ObjectGone(uri, "not found (HTTP 404)")
    if code in (401, 403):
        return FetchRefused(
            uri, f"access denied (HTTP {code}): check the object store's credentials"
        )
    if 400 <= code < 500 and code not in (408, 429):
        return FetchRefused(uri, f"refused (HTTP {code}): {first[:200]}")
    return Transient(uri, first[:300])  # 429, 5xx, timeouts, resets, connection refused


class ObjectStores:
    """The object store clients of this process, one per bucket."""

    def __init__(self, backoff: Backoff | None = None) -> None:
        self.backoff = backoff or default_backoff()
        self._stores: dict[tuple[str, str], Any] = {}

    def store(self, uri: SourceUri) -> Any:
        key = (uri.scheme, uri.bucket)
        if key not in self._stores:
            if uri.scheme == "s3":
                config = s3_config()
                options = dict(CLIENT_OPTIONS, allow_http=allows_http(config))
                s3: Any = stores.S3Store  # (its config is a TypedDict; ours a plain dict)
                self._stores[key] = s3(
                    uri.bucket, config=config, client_options=options,
                    retry_config=STORE_RETRIES,
                )  # fmt: skip
            else:
                options = dict(CLIENT_OPTIONS, allow_http=allows_http({}))
                from_url: Any = stores.from_url
                self._stores[key] = from_url(
                    f"{uri.scheme}://{uri.bucket}", client_options=options,
                    retry_config=STORE_RETRIES,
                )  # fmt: skip
        return self._stores[key]

    async def pages(
        self, prefix: SourceUri, *, after: str | None = None, page_objects: int = PAGE_OBJECTS
    ) -> AsyncIterator[list[ListedObject]]:
        """The objects under ``prefix`` in key order, a page at a time, starting after the key
        ``after`` (a checkpoint's). A listing that fails starts again after the last key it
        gave, with backoff; :class:`SourceUnavailable` once it fails for the whole budget."""
        store = self.store(prefix)
        last, attempt, deadline = after, 0, 0.0
        while True:
            try:
                stream = obstore.list(
                    store, prefix.key.rstrip("/") or None, offset=last, chunk_size=page_objects
                )
                async for batch in stream:
                    listed = [self._listed(prefix, m) for m in batch]
                    last, attempt, deadline = batch[-1]["path"], 0, 0.0
                    if listed := [o for o in listed if o.key.startswith(prefix.key)]:
                        yield listed
                return
            except Exception as e:
                err = _classify(prefix.text, e)
                if isinstance(err, ObjectGone):
                    raise FetchRefused(prefix.text, "cannot be listed: no such bucket") from None
                if not isinstance(err, Transient):
                    raise err from None
                deadline = deadline or time.monotonic() + (self.backoff.budget_s or 0.0)
                if time.monotonic() > deadline:
                    listing = Transient(prefix.text, f"listing: {err.message}")
                    raise unavailable(listing, self.backoff.budget_s) from None
                await asyncio.sleep(self.backoff.wait_s(attempt))
                attempt += 1

    @staticmethod
    def _listed(prefix: SourceUri, meta: Any) -> ListedObject:
        key = str(meta["path"])
        return ListedObject(
            key, prefix.object_uri(key), int(meta.get("size") or 0), meta.get("e_tag"),
            meta.get("version"),
        )  # fmt: skip

    async def get(self, uri: SourceUri, max_bytes: int) -> Fetched:
        """The object's bytes (:class:`ObjectGone` for a 404, ``too_large`` over ``max_bytes``
        before its body is read), retried with backoff."""
        store = self.store(uri)

        async def once() -> Fetched:
            try:
                result = await obstore.get_async(store, uri.key)
                size = int(result.meta.get("size") or 0)
                if size > max_bytes:
                    raise FetchRefused(
                        uri.text, f"{size} bytes, over the limit of {max_bytes} bytes per file "
                        "(--max-file-bytes)", ErrorCode.TOO_LARGE,
                    )  # fmt: skip
                data = bytes(await result.bytes_async())
            except FetchRefused:
                raise
            except Exception as e:
                raise _classify(uri.text, e) from None
            meta = result.meta
            return Fetched(uri.text, data, meta.get("version") or meta.get("e_tag"))

        return await retried(self.backoff, once)
