"""``poolq search``: through a running worker (default; the only way in embedded mode, where the
worker owns the Qdrant folder), or ``--direct`` (encode here, query Qdrant here).

Hits are documents (each one's best chunk, its other matching chunks listed) unless
``--chunks`` asks for the chunk-level list."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from poolq.ingest.cli.common import CLIENT_ERRORS, error, resolve_redis_url
from poolq.wire.search_types import (
    DEFAULT_GROUP_SIZE,
    MAX_GROUP_SIZE,
    Hit,
    SearchError,
    SearchRequest,
    SearchResult,
)
from poolq.worker.cli.app import app
from poolq.worker.cli.options import config_option, json_option, redis_url_option

# Redis down, no worker running (NoWorkerError) or answering (TimeoutError), the search failing
# in the worker
_FAILED: tuple[type[BaseException], ...] = (*CLIENT_ERRORS, RuntimeError)


def _one_line(text: str | None, width: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"


def _also(hit: Hit) -> str:
    """The other matching chunks of a document's hit: their indexes, best first."""
    return ",".join(str(c.chunk_index) for c in hit.chunks or ()) or "-"


def format_table(result: SearchResult) -> str:
    """One row per hit; grouped, an ``also`` column lists the document's other chunks."""
    width = shutil.get_terminal_size((120, 24)).columns
    grouped = result.group_by is not None
    rows = [("#", "score", "doc_id", "chunk", *(("also",) if grouped else ()), "text")]
    for i, h in enumerate(result.hits, 1):
        also = (_also(h),) if grouped else ()
        rows.append(
            (str(i), f"{h.score:.4f}", str(h.doc_id), str(h.chunk_index), *also, h.text or "")
        )
    n = len(rows[0]) - 1  # columns before the text
    w = [max(len(r[k]) for r in rows) for k in range(n)]
    w[2] = min(w[2], 40)
    if grouped:
        w[4] = min(w[4], 16)
    text_w = max(20, width - sum(w) - 2 * n)
    lines = [
        "  ".join(
            (
                r[0].rjust(w[0]),
                r[1].rjust(w[1]),
                _one_line(r[2], w[2]).ljust(w[2]),
                r[3].rjust(w[3]),
                *((_one_line(r[4], w[4]).ljust(w[4]),) if grouped else ()),
                _one_line(r[-1], text_w),
            )
        )
        for r in rows
    ]
    if not result.hits:
        lines.append("(no hits)")
    return "\n".join(lines)


def json_lines(result: SearchResult) -> list[str]:
    return [
        json.dumps({"rank": i} | h.to_dict(), ensure_ascii=False)
        for i, h in enumerate(result.hits, 1)
    ]


async def _direct(query: str, request: SearchRequest, settings: Any) -> SearchResult:
    from poolq.worker.runtime.query import QueryService
    from poolq.worker.runtime.runtime import open_writer
    from poolq.worker.runtime.vectorizer import Vectorizer

    if not settings.qdrant_url and not Path(settings.qdrant_path).is_dir():
        raise SearchError(f"no embedded Qdrant folder at {settings.qdrant_path!r}")
    writer = open_writer(settings)
    try:
        await writer.start()
    except RuntimeError as e:  # the folder is locked by a running worker
        raise SearchError(
            f"cannot open the embedded Qdrant folder {settings.qdrant_path!r} ({e}); while a "
            "worker runs, search through it (drop --direct)"
        ) from None
    vectorizer = await Vectorizer.start(settings.profile, device=settings.device)
    try:
        return await QueryService(vectorizer, writer).search(query, request)
    finally:
        await vectorizer.stop()
        await writer.stop()


async def _via_worker(
    query: str, request: SearchRequest, redis_url: str, timeout_s: float
) -> SearchResult:
    from poolq.ingest.client import PoolqClient

    async with PoolqClient(redis_url) as client:
        return await client.search(
            query,
            request.collection,
            mode=request.mode,
            limit=request.limit,
            filters=request.filters,
            score_threshold=request.score_threshold,
            fusion=request.fusion,
            candidates=request.candidates,
            group_by=request.group_by,
            group_size=request.group_size,
            timeout_s=timeout_s,
        )


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
    direct: bool,
    config: Path | None,
    redis_url: str | None,
    qdrant_url: str | None,
    qdrant_path: Path | None,
    qdrant_api_key: str | None,
    timeout_s: float,
    group_by: str | None = "doc_id",
    group_size: int = DEFAULT_GROUP_SIZE,
) -> int:
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
        )
        if direct:  # loads the models here: the only client path that imports torch
            from poolq.worker.config.settings import load_settings

            settings = load_settings(
                config,
                {
                    "redis_url": redis_url,
                    "qdrant_url": qdrant_url,
                    "qdrant_path": str(qdrant_path) if qdrant_path else None,
                    "qdrant_api_key": qdrant_api_key,
                },
            )
            result = asyncio.run(_direct(query, request, settings))
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
    print(
        f"poolq search: {len(result.hits)} hits "
        f"({'documents' if result.group_by else 'chunks'}), mode {result.mode}, "
        f"encode {result.encode_s * 1000:.0f} ms, search {result.search_s * 1000:.0f} ms",
        file=sys.stderr,
    )
    return 0


QUERY_HELP = (
    "What to search for. A query that starts with '-' goes in --query, or after '--' "
    "(poolq search --collection docs -- '- Start writing')."
)


def pick_query(query: str | None, query_option: str | None) -> str:
    """Exactly one of QUERY and ``--query``."""
    if (query is None) == (query_option is None):
        which = "both QUERY and --query" if query is not None else "no query"
        raise SearchError(f"{which}: give the query as QUERY or as --query TEXT, once")
    return query if query is not None else str(query_option)


@app.command()
def search(
    query: str | None = typer.Argument(None, metavar="QUERY", help=QUERY_HELP),
    query_option: str | None = typer.Option(
        None, "--query", metavar="TEXT", help="The query, as an option (one that starts with '-')."
    ),
    collection: str = typer.Option(..., "--collection", help="Collection (or alias) to search."),
    mode: str | None = typer.Option(
        None,
        "--mode",
        help="dense, sparse, hybrid or rerank (default: rerank when the collection has a "
        "multi-vector, else hybrid).",
    ),
    limit: int = typer.Option(
        10, "--limit", min=1, max=1000, help="Number of hits (documents, or with --chunks chunks)."
    ),
    chunks: bool = typer.Option(
        False,
        "--chunks",
        help="One hit per matching chunk (several of one document if they match) instead of "
        "one per document.",
    ),
    group_size: int = typer.Option(
        DEFAULT_GROUP_SIZE,
        "--group-size",
        min=1,
        max=MAX_GROUP_SIZE,
        help="Per document: its best chunk and up to N-1 other matching chunks (listed under "
        "'also', and in JSON as \"chunks\").",
    ),
    filters: list[str] = typer.Option(
        [],
        "--filter",
        help="KEY=VALUE, KEY!=VALUE, KEY>N, KEY>=N, KEY<N, KEY<=N on payload fields or "
        "document metadata; repeat to require several.",
    ),
    score_threshold: float | None = typer.Option(
        None, "--score-threshold", help="Drop hits scoring below this."
    ),
    fusion: str = typer.Option("rrf", "--fusion", help="rrf or dbsf (hybrid and rerank)."),
    as_json: bool = json_option(
        'one JSON line per hit: {"rank", "id", "score", "doc_id", "chunk_index", "text", '
        '"metadata", "chunks"} ("chunks": the other matching chunks [{"id", "score", '
        '"chunk_index", "text"}]; not with --chunks).'
    ),
    direct: bool = typer.Option(
        False,
        "--direct",
        help="Encode here and query Qdrant directly (a Qdrant server, or an embedded folder "
        "no worker holds) instead of asking a worker.",
    ),
    config: Path | None = config_option(),
    redis_url: str | None = redis_url_option(),
    qdrant_url: str | None = typer.Option(
        None, "--qdrant-url", help="With --direct: Qdrant server (env POOLQ_QDRANT_URL)."
    ),
    qdrant_path: Path | None = typer.Option(
        None, "--qdrant-path", help="With --direct: embedded folder (env POOLQ_QDRANT_PATH)."
    ),
    qdrant_api_key: str | None = typer.Option(
        None, "--qdrant-api-key", help="env POOLQ_QDRANT_API_KEY"
    ),
    timeout_s: float = typer.Option(
        30.0,
        "--timeout",
        help="Seconds to wait for a busy worker's answer (with no worker running: at once).",
    ),
) -> None:
    """Search a collection: a table of hits (one per document: its best chunk; --chunks for
    the chunks themselves), or JSON lines with --json. Exit status: 0 hits
    (or none) printed; 2 a bad request (flag, filter, collection); 3 no worker running, none
    answering within --timeout, or the search failed in the worker."""
    try:
        text = pick_query(query, query_option)
    except SearchError as e:
        error("search", e)
        raise typer.Exit(2) from None
    raise typer.Exit(
        run_search(
            text,
            collection,
            mode=mode,
            limit=limit,
            filters=filters,
            score_threshold=score_threshold,
            fusion=fusion,
            as_json=as_json,
            direct=direct,
            config=config,
            redis_url=redis_url,
            qdrant_url=qdrant_url,
            qdrant_path=qdrant_path,
            qdrant_api_key=qdrant_api_key,
            timeout_s=timeout_s,
            group_by=None if chunks else "doc_id",
            group_size=group_size,
        )
    )
