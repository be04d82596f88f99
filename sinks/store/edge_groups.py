"""Grouped queries on Qdrant Edge, which (0.9) has no ``query_points_groups``: the plain query
runs with enough candidates and its points are grouped here by a payload field.

What comes back is what Qdrant's grouping returns: at most ``limit`` groups, best first (ranked
by their best point), each with at most ``group_size`` points, best first; points without the
field (or with a value that is not a string or an integer) belong to no group.

How many candidates: the query first runs as it was built (its prefetch depths unchanged),
asking for ``limit * group_size`` points at the top. When that yields fewer than ``limit``
groups (a long document's chunks filled the candidates) and a deeper run could find more, it
runs again with every limit (the top one and each prefetch's) doubled: at most ``MAX_ROUNDS``
runs, no stage deeper than ``MAX_CANDIDATES``. Each run is the whole query on a deeper
candidate pool, and the groups come from the last run alone, so the scores that rank them come
from one fusion (RRF and DBSF scores depend on the depth of the lists they fuse).

Filling: a group left with fewer than ``group_size`` points asks for more of its own, as
Qdrant does: the query again, filtered (in every stage) to the groups not yet full and to points
not yet found, at most ``MAX_FILL_ROUNDS`` times; points are re-sorted within each group, and
groups by their best point. Only where a point's score does not depend on the other candidates:
nearest on a vector (dense, sparse, and the MaxSim rerank at the top); a fused list (RRF, DBSF)
is not filled, since a filtered fusion scores on another scale.

A Qdrant server gets there differently (see ``client.py``): it multiplies every prefetch limit
by ``limit`` from the start, then excludes filled groups by filter in further rounds. So with
fusion its candidate pool is deeper and it fills fused groups too. With dense or sparse alone
(no prefetch) both give the same groups (qdrant-client's local mode, every point grouped, too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from qdrant_client import models

MAX_ROUNDS = 5  # depth x1, x2, x4, x8, x16
MAX_FILL_ROUNDS = 3
MAX_CANDIDATES = 4096  # points asked of any one stage
DEFAULT_PREFETCH_LIMIT = 10  # what Qdrant takes for a prefetch without a limit

Run = Callable[[dict[str, Any]], list[models.ScoredPoint]]


def query_groups(run: Run, request: dict[str, Any]) -> list[models.PointGroup]:
    """Run the ``query_points_groups`` request (its keyword arguments) through ``run``, a
    ``query_points`` of the store (see the module docstring)."""
    kw = dict(request)
    group_by = kw.pop("group_by")
    group_size = int(kw.pop("group_size", 3))
    limit = int(kw.pop("limit", None) or 10)
    prefetch = kw.pop("prefetch", None)
    groups: list[models.PointGroup] = []
    depth: tuple[int, ...] = ()
    found = 0  # points the previous run returned
    complete = False  # every point that matches came back
    for round_ in range(MAX_ROUNDS):
        factor = 2**round_
        asked = min(limit * group_size * factor, MAX_CANDIDATES)
        deeper = _deeper(prefetch, factor)
        if (asked, *_limits(deeper)) == depth:
            break  # every stage at MAX_CANDIDATES already
        depth = (asked, *_limits(deeper))
        points = run(kw | {"limit": asked, "prefetch": deeper})
        groups = group_points(points, group_by, group_size, limit)
        complete = len(points) < asked and prefetch is None
        if len(groups) >= limit or complete:
            break  # enough, or every point that matches (no prefetch to deepen)
        if round_ > 0 and len(points) <= found:
            break  # a deeper pool found nothing more: it is all there is
        found = len(points)
    if not complete and not isinstance(kw.get("query"), models.FusionQuery):
        groups = _fill(run, kw | {"prefetch": prefetch}, groups, group_by, group_size)
    return groups


def _fill(
    run: Run,
    kw: dict[str, Any],
    groups: list[models.PointGroup],
    group_by: str,
    group_size: int,
) -> list[models.PointGroup]:
    """More points of the groups not yet full (see the module docstring)."""
    by_key = {g.id: list(g.hits) for g in groups}
    for _ in range(MAX_FILL_ROUNDS):
        short = [k for k, hits in by_key.items() if len(hits) < group_size]
        if not short:
            break
        seen = [p.id for hits in by_key.values() for p in hits]
        only = models.Filter(
            must=[models.FieldCondition(key=group_by, match=models.MatchAny(any=cast(Any, short)))],
            must_not=[models.HasIdCondition(has_id=seen)],
        )
        flt = _and(kw.get("query_filter"), only)
        asked = min(len(short) * (group_size - 1), MAX_CANDIDATES)
        points = run(
            kw | {"query_filter": flt, "limit": asked, "prefetch": _filtered(kw["prefetch"], only)}
        )
        for p in points:
            hits = by_key.get((p.payload or {}).get(group_by))  # type: ignore[arg-type]
            if hits is not None and len(hits) < group_size:
                hits.append(p)
        if len(points) < asked:
            break  # every point of those groups that matches
    ranked = [(k, sorted(hits, key=lambda p: -p.score)) for k, hits in by_key.items()]
    ranked.sort(key=lambda kv: -kv[1][0].score)
    return [models.PointGroup.model_construct(id=k, hits=hits, lookup=None) for k, hits in ranked]


def _and(a: models.Filter | None, b: models.Filter) -> models.Filter:
    return b if a is None else models.Filter(must=[a, b])


def _filtered(prefetch: Any, only: models.Filter) -> Any:
    """The prefetch tree with ``only`` required in every stage."""
    if prefetch is None:
        return None
    if isinstance(prefetch, list):
        return [_filtered(p, only) for p in prefetch]
    return prefetch.model_copy(
        update={
            "filter": _and(prefetch.filter, only),
            "prefetch": _filtered(prefetch.prefetch, only),
        }
    )


def group_points(
    points: list[models.ScoredPoint], group_by: str, group_size: int, limit: int
) -> list[models.PointGroup]:
    """Points (best first) into at most ``limit`` groups of at most ``group_size``, in the
    order of their best points."""
    groups: dict[str | int, list[models.ScoredPoint]] = {}
    for p in points:
        key = (p.payload or {}).get(group_by)
        if isinstance(key, bool) or not isinstance(key, str | int):
            continue
        hits = groups.get(key)
        if hits is None:
            if len(groups) == limit:
                continue  # a group beyond the limit: only the chosen ones take more points
            hits = groups[key] = []
        if len(hits) < group_size:
            hits.append(p)
    return [models.PointGroup.model_construct(id=k, hits=v, lookup=None) for k, v in groups.items()]


def _deeper(prefetch: Any, factor: int) -> Any:
    """The prefetch tree with every limit times ``factor`` (at most ``MAX_CANDIDATES``)."""
    if prefetch is None:
        return None
    if isinstance(prefetch, list):
        return [_deeper(p, factor) for p in prefetch]
    limit = min((prefetch.limit or DEFAULT_PREFETCH_LIMIT) * factor, MAX_CANDIDATES)
    return prefetch.model_copy(
        update={"limit": limit, "prefetch": _deeper(prefetch.prefetch, factor)}
    )


def _limits(prefetch: Any) -> list[int]:
    if prefetch is None:
        return []
    if isinstance(prefetch, list):
        return [n for p in prefetch for n in _limits(p)]
    return [prefetch.limit, *_limits(prefetch.prefetch)]
