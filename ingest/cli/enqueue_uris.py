"""What ``poolq enqueue`` sends for documents given by URI: a bucket's prefix
(``s3://bucket/prefix/``, ``gs://``, ``az://``), listed here, or a file of URLs (``--urls``, one
a line). Each becomes a document ``{"id": URI, "uri": URI, "metadata": {"path"?}}``: the
workers fetch it, the client sends no bytes.

Listing a prefix needs obstore (``pip install 'poolq[sources]'``), imported only then:
application code that passes URIs to :meth:`PoolqClient.enqueue` needs no cloud library. The
store's credentials come from the environment (:mod:`poolq.wire.object_store_config`); they are never
printed or sent. Objects are chosen as a folder's files are (``--include``/``--exclude``, the
parse stage's types by name); objects over ``--max-file-bytes`` are named and not sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from poolq.ingest.cli.enqueue_input import NAMES_SHOWN, Prepared, Problem
from poolq.wire.job_plan import Limits
from poolq.wire.object_store_config import allows_http, s3_config
from poolq.wire.uris import SourceUri, UriError, chosen, parse_uri

SOURCES_EXTRA = "pip install 'poolq[sources]'"


class ListingError(ValueError):
    """A prefix that cannot be listed (names it and why; never a credential)."""


def _store(uri: SourceUri) -> Any:
    try:
        from obstore import store as stores
    except ImportError:
        raise ListingError(
            f"listing {uri.text} needs obstore: {SOURCES_EXTRA} (or give the objects' URIs)"
        ) from None
    options: dict[str, Any] = {"timeout": "60s", "connect_timeout": "5s", "user_agent": "poolq"}
    if uri.scheme == "s3":
        config = s3_config()
        options["allow_http"] = allows_http(config)
        s3: Any = stores.S3Store  # (its config is a TypedDict; ours a plain dict)
        return s3(uri.bucket, config=config, client_options=options)
    options["allow_http"] = allows_http({})
    from_url: Any = stores.from_url
    return from_url(f"{uri.scheme}://{uri.bucket}", client_options=options)


def listed(uri: SourceUri) -> Iterator[tuple[str, int]]:
    """``(key, size)`` of every object under the prefix, in key order, a page at a time."""
    import obstore

    try:
        stream = obstore.list(_store(uri), uri.key.rstrip("/") or None, chunk_size=1000)
        for page in stream:
            for meta in page:
                if str(meta["path"]).startswith(uri.key):
                    yield str(meta["path"]), int(meta.get("size") or 0)
    except ListingError:
        raise
    except Exception as e:  # obstore's errors: the first line says what failed, no secret
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise ListingError(f"cannot list {uri.text}: {first[:300]}") from None


def prepare_prefix(
    text: str, limits: Limits, *, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()
) -> Prepared:
    uri = parse_uri(text)
    if not uri.is_prefix:  # one object: sent as it is
        out = Prepared(read=1)
        out.documents.append({"id": uri.text, "uri": uri.text, "metadata": {"path": uri.name}})
        return out
    out = Prepared()
    left: dict[str, list[str]] = {}
    for key, size in listed(uri):
        rel = uri.relative(key)
        if why := chosen(rel, include, exclude):
            left.setdefault(why, []).append(rel)
            continue
        out.read += 1
        object_uri = uri.object_uri(key)
        if size > limits.max_file_bytes:
            out.problems.append(Problem(object_uri, object_uri, (
                f"{size} bytes, over the limit of {limits.max_file_bytes} bytes per file "
                "(--max-file-bytes); not sent"
            )))  # fmt: skip
            continue
        out.documents.append({"id": object_uri, "uri": object_uri, "metadata": {"path": rel}})
    for why, names in left.items():
        shown = ", ".join(names[:NAMES_SHOWN])
        more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
        out.notes.append(f"skipped {len(names)} objects {why}: {shown}{more}")
    return out


def prepare_urls(path: Path) -> Prepared:
    """One URL a line (blank lines and ``#`` comments skipped); a bad or repeated line is a
    problem named ``FILE:LINE``, the others are sent."""
    out = Prepared()
    first: dict[str, str] = {}
    with path.open(encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, start=1):
            url = line.strip()
            if not url or url.startswith("#"):
                continue
            where = f"{path}:{lineno}"
            out.read += 1
            try:
                parsed = parse_uri(url)
            except UriError as e:
                out.problems.append(Problem(where, None, f"{e}; not sent"))
                continue
            if parsed.is_prefix:
                out.problems.append(Problem(where, url, "a prefix, not one document; not sent"))
                continue
            if url in first:
                out.problems.append(
                    Problem(where, url, f"appears more than once (first at {first[url]}); not sent")
                )
                continue
            first[url] = where
            out.documents.append({"id": url, "uri": url})
    return out
