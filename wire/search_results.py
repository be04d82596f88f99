"""Search requests and results as plain data: what a client sends and gets back, and what the
worker's search service and the sink exchange. No Qdrant, numpy or torch here, so the client
(``from poolq import SearchRequest``) stays light; ``sinks/search.py`` turns these into Query
API calls.

Grouping: a request with ``group_by="doc_id"`` asks for one hit per document, its best chunk,
listing up to ``group_size - 1`` other chunks of it among the matches (:attr:`Hit.chunks`);
``group_by=None`` asks for the chunks themselves, in rank order. The client and ``poolq search``
group by default; a bare :class:`SearchRequest` asks for chunks.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

SearchMode = Literal["dense", "sparse", "hybrid", "rerank"]
Fusion = Literal["rrf", "dbsf"]
SEARCH_MODES: tuple[SearchMode, ...] = get_args(SearchMode)
FUSIONS: tuple[Fusion, ...] = get_args(Fusion)
MAX_LIMIT = 1000
GROUP_FIELDS: tuple[str, ...] = ("doc_id",)  # payload fields search may group by
DEFAULT_GROUP_SIZE = 3  # the best chunk and up to two others (Qdrant's own default)
MAX_GROUP_SIZE = 100


class SearchError(ValueError):
    """A search request that cannot run as asked (bad mode, filter, limit, missing vector)."""


@dataclass(frozen=True)
class SearchRequest:
    """What to search for, apart from the query text. ``mode=None`` picks the best mode the
    collection supports (see :func:`resolve_mode`). ``candidates`` is how many points each
    prefetch returns for fusion and rerank (default: see :attr:`fusion_limit` and
    :attr:`rerank_pool`). ``group_by`` (None here: chunks) and ``group_size``: see the module
    docstring. ``reranker``: whether the profile's reranker, where it names one, re-scores the
    hits (False: the mode's own scores)."""

    collection: str
    mode: SearchMode | None = None
    limit: int = 10
    filters: tuple[str, ...] = ()
    score_threshold: float | None = None
    fusion: Fusion = "rrf"
    candidates: int | None = None
    group_by: str | None = None
    group_size: int = DEFAULT_GROUP_SIZE
    reranker: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.collection, str) or not self.collection:
            raise SearchError(f"collection: expected a non-empty string, got {self.collection!r}")
        if self.mode is not None and self.mode not in SEARCH_MODES:
            raise SearchError(f"mode: expected one of {list(SEARCH_MODES)}, got {self.mode!r}")
        if self.fusion not in FUSIONS:
            raise SearchError(f"fusion: expected one of {list(FUSIONS)}, got {self.fusion!r}")
        for name, value in (("limit", self.limit), ("candidates", self.candidates)):
            if value is None and name == "candidates":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
                raise SearchError(f"{name}: expected an integer in 1..{MAX_LIMIT}, got {value!r}")
        if self.group_by is not None and self.group_by not in GROUP_FIELDS:
            raise SearchError(
                f"group_by: expected one of {list(GROUP_FIELDS)} or None (chunks), "
                f"got {self.group_by!r}"
            )
        gs = self.group_size
        if isinstance(gs, bool) or not isinstance(gs, int) or not 1 <= gs <= MAX_GROUP_SIZE:
            raise SearchError(f"group_size: expected an integer in 1..{MAX_GROUP_SIZE}, got {gs!r}")
        if self.score_threshold is not None and (
            isinstance(self.score_threshold, bool)
            or not isinstance(self.score_threshold, int | float)
            or not math.isfinite(self.score_threshold)
        ):
            raise SearchError(
                f"score_threshold: expected a finite number, got {self.score_threshold!r}"
            )
        if not isinstance(self.reranker, bool):
            raise SearchError(f"reranker: expected true or false, got {self.reranker!r}")
        if isinstance(self.filters, str) or not all(isinstance(f, str) for f in self.filters):
            raise SearchError(f"filters: expected a list of strings, got {self.filters!r}")
        object.__setattr__(self, "filters", tuple(self.filters))
        from poolq.wire.filters import parse_conditions  # (filters import SearchError)

        parse_conditions(self.filters)  # fail early, before any model work

    @property
    def fusion_limit(self) -> int:
        """Candidates from each of dense and sparse for ``hybrid``: short lists by default
        (``max(20, 2 * limit)``), since deep ranks of a weak list only add noise to RRF."""
        return self.candidates if self.candidates is not None else max(20, 2 * self.limit)

    @property
    def rerank_pool(self) -> int:
        """Fused candidates MaxSim re-scores in ``rerank`` (``max(50, 5 * limit)``)."""
        return self.candidates if self.candidates is not None else max(50, 5 * self.limit)

    def to_dict(self) -> dict[str, Any]:
        """The request as sent to a worker: every field."""
        return {
            "collection": self.collection,
            "mode": self.mode,
            "limit": self.limit,
            "filters": list(self.filters),
            "score_threshold": self.score_threshold,
            "fusion": self.fusion,
            "candidates": self.candidates,
            "group_by": self.group_by,
            "group_size": self.group_size,
            "reranker": self.reranker,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchRequest:
        if not isinstance(data, Mapping):
            raise SearchError(f"search request: expected a map, got {type(data).__name__}")
        allowed = set(cls.__dataclass_fields__)
        unknown = set(data) - allowed
        if unknown:
            raise SearchError(
                f"search request: unknown keys {sorted(map(str, unknown))}; allowed: {sorted(allowed)}"
            )
        args = dict(data)
        if isinstance(args.get("filters"), list):
            args["filters"] = tuple(args["filters"])
        try:
            return cls(**args)
        except TypeError as e:
            raise SearchError(f"search request: {e}") from None


@dataclass(frozen=True)
class Citation:
    """Where a hit's text comes from, from its point's payload: ``source`` (the file's path
    relative to the folder it was enqueued from, or its URI; None for a document sent as
    text), ``title``, ``mime``, ``page_start``/``page_end`` (1-based pages of a PDF, slides of
    a PPTX; None for formats without pages) and ``headings`` (outermost first)."""

    source: str | None = None
    title: str | None = None
    mime: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    headings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "title": self.title,
            "mime": self.mime,
            "page_start": self.page_start,
            "page_end": self.page_end,
            "headings": list(self.headings),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Citation:
        """From a citation map or a point's payload (missing fields: None, no headings)."""
        data = data or {}

        def text(key: str) -> str | None:
            v = data.get(key)
            return v if isinstance(v, str) else None

        def page(key: str) -> int | None:
            v = data.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) else None

        heads = data.get("headings")
        headings = (
            tuple(h for h in heads if isinstance(h, str)) if isinstance(heads, list | tuple) else ()
        )
        return cls(
            text("source"), text("title"), text("mime"), page("page_start"), page("page_end"),
            headings,
        )  # fmt: skip

    def label(self, fallback: str | None = None) -> str:
        """For people: ``manual.pdf p.12–13``, ``guide.html › Install › Linux``, or the
        source alone (``fallback``, e.g. the document id, where there is no source)."""
        where = self.source or fallback or ""
        if self.page_start is not None:
            end = self.page_end if self.page_end is not None else self.page_start
            pages = (
                f"p.{self.page_start}" if end == self.page_start else f"p.{self.page_start}–{end}"
            )
            where = f"{where} {pages}".strip()
        elif self.headings:
            where = " › ".join([where, *self.headings] if where else list(self.headings))
        return where


@dataclass(frozen=True)
class ChunkMatch:
    """Another matching chunk of a grouped hit's document."""

    id: str
    score: float
    chunk_index: int | None
    text: str | None
    citation: Citation = field(default_factory=Citation)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "score": self.score,
            "chunk_index": self.chunk_index,
            "text": self.text,
            "citation": self.citation.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChunkMatch:
        return cls(
            str(data["id"]), float(data["score"]), data.get("chunk_index"), data.get("text"),
            Citation.from_dict(data.get("citation")),
        )  # fmt: skip


@dataclass(frozen=True)
class Hit:
    """One result: the point, its score, and the chunk's document, text and metadata. In a
    grouped search the hit is a document: its best chunk (whose score is the document's), and
    in ``chunks`` its other matching chunks, best first (None in a chunk-level search)."""

    id: str
    score: float
    doc_id: str | None
    chunk_index: int | None
    text: str | None
    metadata: dict[str, Any] = field(default_factory=dict)
    chunks: list[ChunkMatch] | None = None
    citation: Citation = field(default_factory=Citation)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "score": self.score,
            "doc_id": self.doc_id,
            "chunk_index": self.chunk_index,
            "text": self.text,
            "metadata": self.metadata,
            "citation": self.citation.to_dict(),
        }
        if self.chunks is not None:  # (a chunk-level hit has no "chunks": `--json --chunks`)
            out["chunks"] = [c.to_dict() for c in self.chunks]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hit:
        return cls(
            str(data["id"]),
            float(data["score"]),
            data.get("doc_id"),
            data.get("chunk_index"),
            data.get("text"),
            dict(data.get("metadata") or {}),
            None
            if data.get("chunks") is None
            else [ChunkMatch.from_dict(c) for c in data["chunks"]],
            Citation.from_dict(data.get("citation")),
        )


@dataclass(frozen=True)
class SearchResult:
    """Hits in rank order, the mode that ran and where the time went (``encode_s`` is the
    query's model time, ``search_s`` the Qdrant call, ``rerank_s`` the reranker's stage, None
    where none ran), and ``group_by``: the payload field the hits were grouped by (one hit per
    document), or None for chunks. ``reranker``: the model that re-scored the hits (their
    scores are its), None where none did. Iterating, ``len`` and indexing go over the hits:
    ``for hit in await client.search(...)``."""

    query: str
    collection: str
    mode: str
    hits: list[Hit]
    encode_s: float
    search_s: float
    worker_id: str | None = None
    group_by: str | None = None
    rerank_s: float | None = None
    reranker: str | None = None

    def __iter__(self) -> Iterator[Hit]:
        """``for hit in result``: the hits in rank order."""
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, index: int) -> Hit:
        return self.hits[index]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "collection": self.collection,
            "mode": self.mode,
            "hits": [h.to_dict() for h in self.hits],
            "encode_s": self.encode_s,
            "search_s": self.search_s,
            "worker_id": self.worker_id,
            "group_by": self.group_by,
            "rerank_s": self.rerank_s,
            "reranker": self.reranker,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        return cls(
            str(data["query"]),
            str(data["collection"]),
            str(data["mode"]),
            [Hit.from_dict(h) for h in data["hits"]],
            float(data["encode_s"]),
            float(data["search_s"]),
            data.get("worker_id"),
            data.get("group_by"),
            None if data.get("rerank_s") is None else float(data["rerank_s"]),
            data.get("reranker"),
        )
