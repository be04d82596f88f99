"""Searching a collection poolq wrote: modes, payload filters, Qdrant Query API requests, hits.

Modes (each a single ``query_points`` call, so fusion and rerank run inside Qdrant):

* ``dense`` / ``sparse``: nearest neighbours on one named vector;
* ``hybrid``: dense and sparse candidates prefetched, then fused (RRF by default, DBSF optional);
* ``rerank``: the hybrid candidates re-scored by MaxSim on the multi-vector (the default when the
  collection has one).

Query encoding is not done here (sinks know nothing of models): callers pass the query's vectors
by name, encoded with the collection's profile (see ``worker/query.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
from qdrant_client import QdrantClient, models

from sinks.points import SparseValues, VectorValue
from sinks.schema import CollectionSchema, VectorKind, is_local, resolve_alias

SearchMode = Literal["dense", "sparse", "hybrid", "rerank"]
Fusion = Literal["rrf", "dbsf"]
SEARCH_MODES: tuple[SearchMode, ...] = get_args(SearchMode)
FUSIONS: tuple[Fusion, ...] = get_args(Fusion)
MAX_LIMIT = 1000

# payload fields every point carries; any other filter key is looked up in ``metadata``
TOP_LEVEL_FIELDS = frozenset(
    {
        "doc_id",
        "chunk_index",
        "chunk_count",
        "text",
        "char_start",
        "char_end",
        "chunk_hash",
        "doc_hash",
        "ingested_at",
    }
)


class SearchError(ValueError):
    """A search request that cannot run as asked (bad mode, filter, limit, missing vector)."""


@dataclass(frozen=True)
class SearchRequest:
    """What to search for, apart from the query text. ``mode=None`` picks the best mode the
    collection supports (see :func:`resolve_mode`). ``candidates`` is how many points each
    prefetch returns for fusion and rerank (default: see :attr:`fusion_limit` and
    :attr:`rerank_pool`)."""

    collection: str
    mode: SearchMode | None = None
    limit: int = 10
    filters: tuple[str, ...] = ()
    score_threshold: float | None = None
    fusion: Fusion = "rrf"
    candidates: int | None = None

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
        if self.score_threshold is not None and (
            isinstance(self.score_threshold, bool)
            or not isinstance(self.score_threshold, int | float)
            or not math.isfinite(self.score_threshold)
        ):
            raise SearchError(
                f"score_threshold: expected a finite number, got {self.score_threshold!r}"
            )
        if isinstance(self.filters, str) or not all(isinstance(f, str) for f in self.filters):
            raise SearchError(f"filters: expected a list of strings, got {self.filters!r}")
        object.__setattr__(self, "filters", tuple(self.filters))
        parse_filters(self.filters)  # fail early, before any model work

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
        return {
            "collection": self.collection,
            "mode": self.mode,
            "limit": self.limit,
            "filters": list(self.filters),
            "score_threshold": self.score_threshold,
            "fusion": self.fusion,
            "candidates": self.candidates,
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
class Hit:
    """One result: the point, its score, and the chunk's document, text and metadata."""

    id: str
    score: float
    doc_id: str | None
    chunk_index: int | None
    text: str | None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "score": self.score,
            "doc_id": self.doc_id,
            "chunk_index": self.chunk_index,
            "text": self.text,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hit:
        return cls(
            str(data["id"]),
            float(data["score"]),
            data.get("doc_id"),
            data.get("chunk_index"),
            data.get("text"),
            dict(data.get("metadata") or {}),
        )

    @classmethod
    def from_point(cls, point: models.ScoredPoint) -> Hit:
        payload = point.payload or {}
        meta = payload.get("metadata")
        return cls(
            str(point.id),
            float(point.score),
            payload.get("doc_id"),
            payload.get("chunk_index"),
            payload.get("text"),
            dict(meta) if isinstance(meta, dict) else {},
        )


@dataclass(frozen=True)
class SearchResult:
    """Hits in rank order, the mode that ran and where the time went (``encode_s`` is the
    query's model time, ``search_s`` the Qdrant call)."""

    query: str
    collection: str
    mode: str
    hits: list[Hit]
    encode_s: float
    search_s: float
    worker_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "collection": self.collection,
            "mode": self.mode,
            "hits": [h.to_dict() for h in self.hits],
            "encode_s": self.encode_s,
            "search_s": self.search_s,
            "worker_id": self.worker_id,
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
        )


# -- filters ---------------------------------------------------------------------------------

_FILTER_RE = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(!=|>=|<=|=|>|<)\s*(.*?)\s*$", re.S)


def parse_filters(exprs: Sequence[str]) -> models.Filter | None:
    """``key=value``, ``key!=value`` and ranges ``key>n``, ``key>=n``, ``key<n``, ``key<=n``,
    all of them required (AND). Keys are payload fields (``doc_id``, ``chunk_index``, ...) or,
    for anything else, the document's ``metadata`` (``lang=en`` is ``metadata.lang``; nested keys
    with dots). Values: ``true``/``false``, integers and strings match exactly; a number with a
    fraction matches the equal number. Range values must be numbers."""
    must: list[models.Condition] = []
    must_not: list[models.Condition] = []
    for expr in exprs:
        m = _FILTER_RE.match(expr) if isinstance(expr, str) else None
        if m is None:
            raise SearchError(
                f"filter {expr!r}: expected KEY=VALUE, KEY!=VALUE or KEY>N / KEY>=N / KEY<N / "
                "KEY<=N (for example lang=en or year>=2020)"
            )
        key, op, raw = m.groups()
        path = key if key in TOP_LEVEL_FIELDS or key.startswith("metadata.") else f"metadata.{key}"
        if op in ("=", "!="):
            (must if op == "=" else must_not).append(_match(path, raw, expr))
        else:
            number = _number(raw)
            if number is None:
                raise SearchError(f"filter {expr!r}: a range needs a number, got {raw!r}")
            bound = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}[op]
            must.append(models.FieldCondition(key=path, range=models.Range(**{bound: number})))
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)


def _number(raw: str) -> float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _match(path: str, raw: str, expr: str) -> models.FieldCondition:
    if raw == "":
        raise SearchError(f"filter {expr!r}: expected a value after the operator")
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":  # quoted: always a string
        return models.FieldCondition(key=path, match=models.MatchValue(value=raw[1:-1]))
    if raw.lower() in ("true", "false"):
        return models.FieldCondition(key=path, match=models.MatchValue(value=raw.lower() == "true"))
    if re.fullmatch(r"[+-]?\d+", raw):
        return models.FieldCondition(key=path, match=models.MatchValue(value=int(raw)))
    number = _number(raw)
    if number is not None and re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", raw):
        return models.FieldCondition(key=path, range=models.Range(gte=number, lte=number))
    return models.FieldCondition(key=path, match=models.MatchValue(value=raw))


# -- modes and requests ----------------------------------------------------------------------


def first_of_kind(schema: CollectionSchema, kind: VectorKind) -> str | None:
    return next((v.name for v in schema.vectors if v.kind == kind), None)


def resolve_mode(schema: CollectionSchema, mode: SearchMode | None) -> SearchMode:
    """The mode to run: ``mode`` if the collection has the vectors it needs; by default
    ``rerank`` with a multi-vector (and something to prefetch with), else ``hybrid`` with dense
    and sparse, else the one kind there is."""
    dense, sparse, multi = (first_of_kind(schema, k) for k in ("dense", "sparse", "multi"))
    if mode is None:
        if multi and (dense or sparse):
            return "rerank"
        if dense and sparse:
            return "hybrid"
        if dense:
            return "dense"
        if sparse:
            return "sparse"
        raise SearchError(f"collection {schema.name!r}: no dense or sparse vector to search")
    missing = {
        "dense": [] if dense else ["a dense vector"],
        "sparse": [] if sparse else ["a sparse vector"],
        "hybrid": [
            w for w, ok in (("a dense vector", dense), ("a sparse vector", sparse)) if not ok
        ],
        "rerank": ([] if multi else ["a multi-vector"])
        + ([] if dense or sparse else ["a dense or sparse vector"]),
    }[mode]
    if missing:
        have = ", ".join(f"{v.name} ({v.kind})" for v in schema.vectors)
        raise SearchError(
            f"mode {mode!r} needs {' and '.join(missing)}; collection {schema.name!r} has {have}"
        )
    return mode


def vectors_needed(schema: CollectionSchema, mode: SearchMode) -> list[str]:
    """Names of the query vectors a mode uses (the first vector of each kind it needs)."""
    kinds: dict[SearchMode, tuple[VectorKind, ...]] = {
        "dense": ("dense",),
        "sparse": ("sparse",),
        "hybrid": ("dense", "sparse"),
        "rerank": ("dense", "sparse", "multi"),
    }
    names = [first_of_kind(schema, k) for k in kinds[mode]]
    return [n for n in names if n is not None]


def _query_value(value: VectorValue) -> Any:
    if isinstance(value, SparseValues):
        return models.SparseVector(indices=list(value.indices), values=list(value.values))
    if isinstance(value, np.ndarray):
        return value.astype(np.float32).tolist()
    return value


def build_query(
    schema: CollectionSchema,
    request: SearchRequest,
    vectors: Mapping[str, VectorValue],
) -> dict[str, Any]:
    """Keyword arguments of ``QdrantClient.query_points`` for ``request``: one call per search,
    with the filter applied in every prefetch as well as at the top."""
    mode = resolve_mode(schema, request.mode)
    names = vectors_needed(schema, mode)
    absent = [n for n in names if n not in vectors]
    if absent:
        raise SearchError(f"mode {mode!r}: query vectors {absent} were not given")
    flt = parse_filters(request.filters)
    dense, sparse, multi = (first_of_kind(schema, k) for k in ("dense", "sparse", "multi"))
    kw: dict[str, Any] = {
        "collection_name": request.collection,
        "query_filter": flt,
        "limit": request.limit,
        "score_threshold": request.score_threshold,
        "with_payload": True,
    }
    if mode in ("dense", "sparse"):
        name = dense if mode == "dense" else sparse
        assert name is not None
        return kw | {"query": _query_value(vectors[name]), "using": name}

    def prefetch(name: str, limit: int) -> models.Prefetch:
        return models.Prefetch(
            query=_query_value(vectors[name]), using=name, filter=flt, limit=limit
        )

    fusion = models.FusionQuery(fusion=models.Fusion(request.fusion))
    if mode == "hybrid":
        lists = [prefetch(n, request.fusion_limit) for n in (dense, sparse) if n is not None]
        return kw | {"prefetch": lists, "query": fusion}
    assert multi is not None
    pool = request.rerank_pool
    firsts = [prefetch(n, pool) for n in (dense, sparse) if n is not None]
    fused: models.Prefetch | list[models.Prefetch]
    if len(firsts) == 2:  # rerank the fused candidates
        fused = models.Prefetch(prefetch=firsts, query=fusion, filter=flt, limit=pool)
    else:
        fused = firsts
    return kw | {"prefetch": fused, "query": _query_value(vectors[multi]), "using": multi}


def search_points(
    client: QdrantClient,
    schema: CollectionSchema,
    request: SearchRequest,
    vectors: Mapping[str, VectorValue],
) -> list[Hit]:
    """Run one search (in the thread that owns ``client``). On embedded Qdrant, ``rerank``
    fetches the fused candidates with their multi-vectors and scores MaxSim here, vectorised
    (the embedded engine's MaxSim loops in Python, about 100x slower); a server reranks itself.
    Both give the same scores and order."""
    kw = build_query(schema, request, vectors)
    if resolve_mode(schema, request.mode) == "rerank" and is_local(client):
        return _rerank_here(client, kw)
    response = client.query_points(**kw)
    return [Hit.from_point(p) for p in response.points]


def _rerank_here(client: QdrantClient, kw: dict[str, Any]) -> list[Hit]:
    multi, query = kw["using"], np.asarray(kw["query"], dtype=np.float32)
    fused = kw["prefetch"]
    if isinstance(fused, list):  # one list to rerank: query it directly
        (only,) = fused
        source: dict[str, Any] = {"query": only.query, "using": only.using, "limit": only.limit}
    else:
        source = {"prefetch": fused.prefetch, "query": fused.query, "limit": fused.limit}
    stored = _embedded_multivectors(client, kw["collection_name"], multi)
    response = client.query_points(
        kw["collection_name"],
        query_filter=kw["query_filter"],
        with_payload=True,
        with_vectors=False if stored is not None else [multi],
        **source,
    )
    points = response.points
    if not points:
        return []
    if stored is not None:
        docs = [stored(str(p.id)) for p in points]
    else:
        docs = [np.asarray(p.vector[multi], dtype=np.float32) for p in points]  # type: ignore[index]
    scores = maxsim_many(query, docs)
    order = np.argsort(-scores, kind="stable")
    threshold = kw["score_threshold"]
    hits = []
    for i in order:
        score = float(scores[i])
        if threshold is not None and score < threshold:
            break
        p = points[int(i)]
        hits.append(Hit.from_point(p.model_copy(update={"score": score, "vector": None})))
        if len(hits) == kw["limit"]:
            break
    return hits


def _embedded_multivectors(
    client: QdrantClient, collection: str, name: str
) -> Callable[[str], np.ndarray] | None:
    """Embedded Qdrant keeps each multi-vector as a numpy array; returning them through the API
    turns each into nested Python lists and back (~1.5 ms per point). Read them in place when
    this qdrant-client's embedded storage looks as expected, else None (use the API)."""
    try:
        local: Any = client._client  # QdrantLocal
        stored = local.collections[resolve_alias(client, collection)]
        arrays, index = stored.multivectors[name], stored.ids
    except (AttributeError, KeyError, TypeError):
        return None
    if not isinstance(arrays, list) or not isinstance(index, dict):
        return None
    return lambda point_id: np.asarray(arrays[index[point_id]], dtype=np.float32)


def maxsim_many(query: np.ndarray, docs: Sequence[np.ndarray]) -> np.ndarray:
    """MaxSim of one query against many documents in two matrix operations:
    ``[n_q, d] @ [sum n_doc, d].T``, then a max over each document's columns."""
    q = query / np.maximum(np.linalg.norm(query, axis=1, keepdims=True), 1e-12)
    stacked = np.concatenate(docs, axis=0)
    stacked = stacked / np.maximum(np.linalg.norm(stacked, axis=1, keepdims=True), 1e-12)
    sims = q @ stacked.T  # [n_q, sum n_doc]
    starts = np.cumsum([0] + [len(d) for d in docs[:-1]])
    return np.maximum.reduceat(sims, starts, axis=1).sum(axis=0)


def maxsim(query: np.ndarray, doc: np.ndarray) -> float:
    """Late-interaction score with cosine similarity: for each query row the best cosine over
    the document's rows, summed (what Qdrant's MAX_SIM comparator computes)."""
    query, doc = np.asarray(query, dtype=np.float64), np.asarray(doc, dtype=np.float64)
    q = query / np.maximum(np.linalg.norm(query, axis=1, keepdims=True), 1e-12)
    d = doc / np.maximum(np.linalg.norm(doc, axis=1, keepdims=True), 1e-12)
    return float((q @ d.T).max(axis=1).sum())
