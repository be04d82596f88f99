"""Multi-vectors stored as ``uint8`` (``multivector_datatype = "uint8"``): the one fixed code map
between the sink's float vectors and the bytes Qdrant keeps, applied by both store backends, so
that everything above the store (writer, search, export/import) keeps seeing floats.

What Qdrant does with a uint8 vector (``lib/segment``, read for Qdrant 1.x and Edge 0.9):

* a float given for a uint8 vector is cast with Rust's ``x as u8``: truncated toward zero and
  saturated, so ``-0.3 -> 0``, ``0.97 -> 0``, ``1.9 -> 1``, ``300 -> 255``. A normalised ColBERT
  vector (values in [-1, 1]) given as it is becomes a vector of zeros and ones;
* cosine on uint8 does not normalise anything (its preprocessing is the identity): the score is
  ``u.v / (|u| |v|)`` over the integer codes;
* the query vector goes through the same cast (after the same identity preprocessing), so a
  float query against uint8 storage is mangled the same way.

The map: each row is normalised to unit length (a row already on the code grid, a decoded one,
is kept as it is), then ``code = 128 + round(127 x)`` (1..255; 0
stays 128, so zero is exact), given to Qdrant as integral floats, which the cast keeps exactly.
Queries get the same map. Back: ``x = (code - 128) / 127``, and encoding a decoded vector gives
the same codes again (export -> import is exact).

What survives: the collection compares uint8 multi-vectors by Euclid distance, not cosine (see
``collection_config.py``). The offset cancels in a difference, so
``-|u_q - u_d|^2 = -127^2 (|x_q|^2 + |x_d|^2 - 2 x_q.x_d) = 2 * 127^2 (x_q.x_d - 1)`` for unit
rows: exactly affine in the cosine, and MaxSim's ranking is the float one up to rounding (each
component within 1/254; a decoded row's length is 1 +- ~0.01). Cosine over the codes would not
be: ``|u|`` depends on a row's sum of components, which then pulls its score (measured: top-10
overlap 8.2/10 against 9.6/10 for Euclid on random 128-d rows). Scores are mapped back to the
cosine scale (Qdrant returns ``sqrt(-S)`` for the summed ``S``: ``MaxSim ~ offset -
score^2 / (2 * 127^2)``, :func:`score_offset`), and so are score thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from qdrant_client import models

SCALE = 127.0
ZERO = 128.0
GRID_TOLERANCE = 1e-3  # a float32 decoded code times 127 is within ~1e-5 of an integer


def encode(x: Any) -> np.ndarray:
    """Rows ``[n, d]`` of floats as uint8 codes (see the module docstring). A uint8 array is
    taken as codes already and returned as it is."""
    a = np.asarray(x)
    if a.dtype == np.uint8:
        return a
    a = a.astype(np.float32, copy=False)
    # a row on the code grid is a decoded one: taken as it is, so that decoded codes encode to
    # themselves (renormalising it could move a code: its length is only 1 +- ~1/254)
    grid = a * np.float32(SCALE)
    on_grid = np.all(
        (np.abs(grid - np.rint(grid)) <= GRID_TOLERANCE) & (np.abs(grid) <= SCALE),
        axis=-1,
        keepdims=True,
    )
    norm = np.linalg.norm(a, axis=-1, keepdims=True)
    norm = np.where(on_grid, np.float32(1), np.maximum(norm, np.float32(1e-12)))
    return (np.clip(np.rint(grid / norm), -SCALE, SCALE) + ZERO).astype(np.uint8)


def decode(codes: Any) -> np.ndarray:
    """uint8 codes (or the integral floats Qdrant returns for them) back to float32 rows."""
    c = np.asarray(codes, dtype=np.float32)
    return (c - np.float32(ZERO)) / np.float32(SCALE)


def for_storage(value: Any, uint8: bool) -> Any:
    """A multi-vector (or dense) value as it must reach a vector whose storage is uint8
    (``uint8``) or float: codes for uint8, floats for float storage (a uint8 array given for
    float storage is decoded)."""
    if uint8:
        return encode(value).astype(np.float32)
    if isinstance(value, np.ndarray) and value.dtype == np.uint8:
        return decode(value)
    return value


def uint8_names(params: models.CollectionParams) -> frozenset[str]:
    """Names of a collection's vectors stored as uint8."""
    vectors = params.vectors if isinstance(params.vectors, dict) else {}
    return frozenset(name for name, p in vectors.items() if p.datatype == models.Datatype.UINT8)


def encode_vectors(vectors: Any, names: frozenset[str]) -> Any:
    """A point's named vectors with every one in ``names`` as codes and any uint8 array
    elsewhere decoded (sparse vectors and anything not an array as they are)."""
    if not isinstance(vectors, dict) or not (
        names or any(isinstance(v, np.ndarray) and v.dtype == np.uint8 for v in vectors.values())
    ):
        return vectors
    return {
        k: for_storage(v, k in names) if isinstance(v, np.ndarray | list) else v
        for k, v in vectors.items()
    }


def encode_points(
    points: Iterable[models.PointStruct], names: frozenset[str], *, arrays_ok: bool
) -> list[models.PointStruct]:
    """qdrant-client's points with :func:`encode_vectors` (and, unless ``arrays_ok``, numpy
    arrays as lists: a server over REST)."""
    out = []
    for p in points:
        vectors = encode_vectors(p.vector, names)
        if not arrays_ok and isinstance(vectors, dict):
            vectors = {
                k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in vectors.items()
            }
        out.append(
            p
            if vectors is p.vector
            else models.PointStruct.model_construct(id=p.id, vector=vectors, payload=p.payload)
        )
    return out


def decode_vectors(vector: Any, names: frozenset[str]) -> Any:
    """A record's named vectors with those in ``names`` decoded to floats (lists, as read)."""
    if not names or not isinstance(vector, Mapping):
        return vector
    return {k: decode(v).tolist() if k in names else v for k, v in vector.items()}


_SCORE_UNIT = 2 * SCALE * SCALE


def to_cosine_scale(score: float, offset: float) -> float:
    """A MaxSim score over uint8 codes on the cosine scale. Qdrant sums the negative squared
    distances ``S`` and, Euclid being a distance, returns ``sqrt(-S)`` (smallest first);
    ``offset`` is the query's :func:`score_offset`."""
    return offset - score * score / _SCORE_UNIT


def from_cosine_scale(threshold: float, offset: float) -> float:
    """A score threshold on the cosine scale as the distance Qdrant compares (at most)."""
    return math.sqrt(max(offset - threshold, 0.0) * _SCORE_UNIT)


def score_offset(codes: Any) -> float:
    """``sum over query rows of (1 + |x_q|^2) / 2`` for the decoded query rows: with unit
    document rows, ``S / (2 * 127^2) + offset`` is the MaxSim of the decoded vectors."""
    q = decode(codes)
    return float(((1.0 + (q.astype(np.float64) ** 2).sum(axis=-1)) / 2).sum())


def encode_request(request: dict[str, Any], names: frozenset[str]) -> dict[str, Any]:
    """A ``query_points`` request with the query of every stage that uses a uint8 vector given
    as codes and its score threshold on the codes' scale (the top stage and the whole prefetch
    tree)."""
    if not names:
        return request
    out = dict(request)
    if out.get("using") in names and out.get("query") is not None:
        out["query"] = _query_codes(out["query"])
        if out.get("score_threshold") is not None:
            offset = score_offset(out["query"])
            out["score_threshold"] = from_cosine_scale(out["score_threshold"], offset)
    if out.get("prefetch") is not None:
        out["prefetch"] = _prefetches(out["prefetch"], names)
    return out


def top_offset(request: dict[str, Any], names: frozenset[str]) -> float | None:
    """The query's :func:`score_offset` when the request's top stage scores a uint8 vector
    (its scores then need :func:`to_cosine_scale`), else None."""
    if request.get("using") not in names or request.get("query") is None:
        return None
    return score_offset(_query_codes(request["query"]))


def _query_codes(q: Any) -> Any:
    if isinstance(q, models.NearestQuery):
        q = q.nearest
    return encode(q).astype(np.float32).tolist()


def _prefetches(p: Any, names: frozenset[str]) -> Any:
    if isinstance(p, list):
        return [_prefetches(x, names) for x in p]
    update: dict[str, Any] = {}
    if p.using in names and p.query is not None:
        update["query"] = _query_codes(p.query)
        if p.score_threshold is not None:
            offset = score_offset(update["query"])
            update["score_threshold"] = from_cosine_scale(p.score_threshold, offset)
    if p.prefetch is not None:
        update["prefetch"] = _prefetches(p.prefetch, names)
    return p.model_copy(update=update) if update else p
