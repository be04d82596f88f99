"""Documents given by a URI: an object in an object store (``s3://``, ``gs://``, ``az://``), a web page or
file (``https://``, ``http://``) or a local file (``file://``).

A URI names one document, or with a trailing ``/`` (or no key at all: ``s3://bucket``) every
object under a prefix. The client only parses URIs and passes them on; a worker fetches them
(``worker/fetch/``). A document's id and its citation ``source`` are its URI, as written here
(:meth:`SourceUri.object_uri`), so the client's ``poolq enqueue`` and a worker's sync name an
object the same way.

Which objects of a prefix are documents is told by their names (:func:`is_document_name`): the
parse stage's types; a listing cannot sniff bytes it has not fetched. ``include``/``exclude``
globs choose among them as they do in a folder (:func:`chosen`).

The standard library only: both sides read URIs by these rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from urllib.parse import urlsplit

OBJECT_SCHEMES = ("s3", "gs", "az")  # object stores: listed by prefix, fetched by key
WEB_SCHEMES = ("http", "https")  # one document per URL
SCHEMES = (*OBJECT_SCHEMES, *WEB_SCHEMES, "file")
DOCUMENT_SUFFIXES = frozenset(
    {".pdf", ".docx", ".pptx", ".epub", ".html", ".htm", ".xhtml", ".md", ".markdown", ".mdown",
     ".txt"}
)  # fmt: skip


class UriError(ValueError):
    """A URI that cannot be used (names it and why)."""


@dataclass(frozen=True)
class SourceUri:
    """``scheme://bucket/key``: ``bucket`` is the container (bucket, Azure container) or the web
    host; ``key`` the object's path in it (no leading ``/``), or the prefix."""

    scheme: str
    bucket: str
    key: str
    text: str  # as given

    @property
    def is_object_store(self) -> bool:
        return self.scheme in OBJECT_SCHEMES

    @property
    def is_prefix(self) -> bool:
        """Every object under the key (an object store's URI ending in ``/``, or no key)."""
        return self.is_object_store and (self.key == "" or self.key.endswith("/"))

    @property
    def name(self) -> str:
        """The last segment of the key (what the parse stage is told the file is called)."""
        return self.key.rstrip("/").rsplit("/", 1)[-1] or self.bucket

    def object_uri(self, key: str) -> str:
        """The URI of the object ``key`` of this URI's bucket (a document's id and source)."""
        return f"{self.scheme}://{self.bucket}/{key}"

    def relative(self, key: str) -> str:
        """``key`` relative to this prefix (what ``include``/``exclude`` globs match)."""
        return key[len(self.key) :] if key.startswith(self.key) else key


def is_uri(text: str) -> bool:
    """Whether ``text`` is written as a URI of a scheme poolq reads (a path never is)."""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


def parse_uri(text: str) -> SourceUri:
    """The parts of ``text``, or :class:`UriError` naming it and what is wrong."""
    if not isinstance(text, str) or "://" not in text:
        raise UriError(f"{text!r} is not a URI (expected scheme://bucket/key)")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise UriError(f"{text!r}: scheme {scheme!r} is not read (use one of {', '.join(SCHEMES)})")
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise UriError(f"{text!r}: a file URI needs an absolute path (file:///path)")
        return SourceUri(scheme, "", parts.path.lstrip("/"), text)
    if not parts.netloc:
        raise UriError(f"{text!r}: no bucket or host after {scheme}://")
    if parts.username or parts.password:
        raise UriError(f"{scheme}://…: credentials in a URI are not read; use the environment")
    if scheme in OBJECT_SCHEMES:  # the key is everything after the bucket, '?' and '#' too
        bucket, _, key = text.split("://", 1)[1].partition("/")
        return SourceUri(scheme, bucket, key, text)
    return SourceUri(scheme, parts.netloc, parts.path.lstrip("/"), text)


def is_document_name(key: str) -> bool:
    """An object named as a type the parse stage reads (by its suffix, case ignored)."""
    base = key.rsplit("/", 1)[-1].lower()
    return "." in base and "." + base.rsplit(".", 1)[-1] in DOCUMENT_SUFFIXES


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    """As in a folder: a glob without ``/`` matches the name, one with ``/`` the path under the
    prefix; case does not matter."""
    rel = rel.lower()
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch(rel if "/" in p else name, p.lower()) for p in patterns)


def chosen(rel: str, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> str | None:
    """Why an object (its key relative to the prefix) is left out, or None when it is read:
    ``"not included"``, ``"excluded"`` or ``"not a document"``."""
    if include and not _matches(rel, include):
        return "not included"
    if exclude and _matches(rel, exclude):
        return "excluded"
    if not is_document_name(rel):
        return "not a document"
    return None
