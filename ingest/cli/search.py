"""``poolq search`` through a running worker: the request checked here, sent to a worker through
Redis (``PoolqClient.search``), its hits printed as a table or as JSON lines, and the exit status.
A ``--direct`` search (encode here, query Qdrant here) needs the worker's own code: the command
(``worker/cli/search.py``) passes it in as ``direct``.

Hits are documents (each one's best chunk, its other matching chunks listed) unless
``--chunks`` asks for the chunk-level list."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from poolq.ingest.cli.command_env import CLIENT_ERRORS, error, resolve_redis_url
from poolq.wire.search_results import (
    DEFAULT_GROUP_SIZE,
    Hit,
    SearchError,
    SearchRequest,
    SearchResult,
)

# Redis down, no worker running (NoWorkerError) or answering (TimeoutError), the search failing
# in the worker
_FAILED: tuple[type[BaseException], ...] = (*CLIENT_ERRORS, RuntimeError)

#: a search that does not go through a worker (``--direct``): the query and the checked request
DirectSearch = Callable[[str, SearchRequest], SearchResult]


def _one_line(text: str | None, width: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"


def _also(hit: Hit) -> str:
    """The other matching chunks of a document's hit: their indexes, best first."""
    return ",".join(str(c.chunk_index) for c in hit.chunks or ()) or "-"


def format_table(result: SearchResult) -> str:
    """One row per hit; grouped, an ``also`` column lists the document's other chunks. The
    ``source`` column cites the hit: ``manual.pdf p.12–13``, ``guide.html › Install › Linux``,
    or the document id of a document sent as text."""
    width = shutil.get_terminal_size((120, 24)).columns
    grouped = result.group_by is not None
    rows = [("#", "score", "source", "chunk", *(("also",) if grouped else ()), "text")]
    for i, h in enumerate(result.hits, 1):
        also = (_also(h),) if grouped else ()
        cited = h.citation.label(fallback=str(h.doc_id))
        rows.append((str(i), f"{h.score:.4f}", cited, str(h.chunk_index), *also, h.text or ""))
    n = len(rows[0]) - 1  # columns before the text
    w = [max(len(r[k]) for r in rows) for k in range(n)]
    w[2] = min(w[2], 60)
    if grouped:
        w[4] = min(w[4], 16)
    text_w = max(20, width - sum(w) - 2 * n)

    def line(r: tuple[str, ...]) -> str:
        cited = _one_line(r[2], w[2]).ljust(w[2])
        also = (_one_line(r[4], w[4]).ljust(w[4]),) if grouped else ()
        cells = (r[0].rjust(w[0]), r[1].rjust(w[1]), cited, r[3].rjust(w[3]), *also)
        return "  ".join((*cells, _one_line(r[-1], text_w)))

    lines = [line(r) for r in rows]
    if not result.hits:
        lines.append("(no hits)")
    return "\n".join(lines)


def json_lines(result: SearchResult) -> list[str]:
    """One line per hit; where a reranker re-scored them, each also says its stage's time
    (``"rerank_s"``) and model (``"reranker"``)."""
    extra = {}
    if result.rerank_s is not None:
        extra = {"rerank_s": result.rerank_s, "reranker": result.reranker}
    return [
        json.dumps({"rank": i} | h.to_dict() | extra, ensure_ascii=False)
        for i, h in enumerate(result.hits, 1)
    ]


def footer(result: SearchResult) -> str:
    """The summary line on stderr: hits, mode, and each stage's time."""
    rerank = ""
    if result.rerank_s is not None:
        rerank = f", rerank {result.rerank_s * 1000:.0f} ms ({result.reranker})"
    return (
        f"poolq search: {len(result.hits)} hits "
        f"({'documents' if result.group_by else 'chunks'}), mode {result.mode}, "
        f"encode {result.encode_s * 1000:.0f} ms, search {result.search_s * 1000:.0f} ms{rerank}"
    )


async def _via_worker(
    query: str, request: SearchRequest, redis_url: str, timeout_s: float
) -> SearchResult:
    from poolq.ingest.client import PoolqClient
    from poolq.ingest.search_call import search_via_workers

    async with PoolqClient(redis_url) as client:  # (PoolqClient.search, the request checked)
        return await search_via_workers(client.redis, redis_url, query, request, timeout_s)


def run_search(
    query: str,
    collection: str,
    *,
    mode: str | None,
    limit: int,
    filters: Sequence[str],
    score_threshold: float | None,
    fusion: str,
    as_json: bool,
    config: Path | None,
    redis_url: str | None,
    timeout_s: float,
    group_by: str | None = "doc_id",
    group_size: int = DEFAULT_GROUP_SIZE,
    direct: DirectSearch | None = None,
    reranker: bool = True,
) -> int:
    """What ``poolq search`` does; returns its exit status (0 hits, or none, printed; 2 a bad
    request; 3 no worker running or answering, or the search failed). ``direct``: search with it
    instead of through a worker (``redis_url`` and ``timeout_s`` are then unused)."""
    try:
        request = SearchRequest(
            collection,
            mode,  # type: ignore[arg-type]
            limit,
            tuple(filters),
            score_threshold,
            fusion,  # type: ignore[arg-type]
            group_by=group_by,
            group_size=group_size,
            reranker=reranker,
        )
        if direct is not None:
            result = direct(query, request)
        else:
            url = resolve_redis_url(redis_url, config)
            result = asyncio.run(_via_worker(query, request, url, timeout_s))
    except (SearchError, ValueError) as e:
        error("search", e)
        return 2
    except _FAILED as e:
        error("search", e)
        return 3
    if as_json:
        for line in json_lines(result):
            print(line)
    else:
        print(format_table(result))
    print(footer(result), file=sys.stderr)
    return 0


def pick_query(query: str | None, query_option: str | None) -> str:
    """Exactly one of QUERY and ``--query``."""
    if (query is None) == (query_option is None):
        which = "both QUERY and --query" if query is not None else "no query"
        raise SearchError(f"{which}: give the query as QUERY or as --query TEXT, once")
    return query if query is not None else str(query_option)
