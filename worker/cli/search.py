"""``poolq search``: its flags and help; what it does is ``ingest/cli/search.py`` (through a
running worker: the default, and the only way in embedded mode, where the worker owns the Qdrant
folder). ``--direct`` (encode here, query Qdrant here) is here: it runs the worker's own code."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from poolq.ingest.cli.command_env import error
from poolq.ingest.cli.search import DirectSearch, pick_query, run_search
from poolq.wire.search_results import (
    DEFAULT_GROUP_SIZE,
    MAX_GROUP_SIZE,
    SearchError,
    SearchRequest,
    SearchResult,
)
from poolq.worker.cli.app import app
from poolq.worker.cli.options import (
    json_option,
    setting_option,
)


async def _direct(query: str, request: SearchRequest, settings: Any) -> SearchResult:
    from poolq.worker.runtime.query import QueryService
    from poolq.worker.runtime.vectorizer import Vectorizer
    from poolq.worker.runtime.worker_runtime import open_writer

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
    from poolq.worker.engine.process_options import process_options_set

    with process_options_set(
        backend=settings.backend, auto_bf16=settings.auto_bf16, cache_dir=settings.cache_dir
    ):
        vectorizer = await Vectorizer.start(settings.profile, device=settings.device)
    try:
        return await QueryService(vectorizer, writer).search(query, request)
    finally:
        await vectorizer.stop()
        await writer.stop()


def direct_search(
    config: Path | None,
    redis_url: str | None,
    qdrant_url: str | None,
    qdrant_path: Path | None,
    qdrant_api_key: str | None,
) -> DirectSearch:
    """``--direct``: the settings are read, and the models loaded, when the search runs (the only
    client path that imports torch)."""

    def search(query: str, request: SearchRequest) -> SearchResult:
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
        return asyncio.run(_direct(query, request, settings))

    return search


QUERY_HELP = (
    "What to search for. A query that starts with '-' goes in --query, or after '--' "
    "(poolq search --collection docs -- '- Start writing')."
)


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
        '"chunk_index", "text"}]; not with --chunks), and "rerank_s" and "reranker" where '
        "a reranker re-scored them."
    ),
    no_reranker: bool = typer.Option(
        False,
        "--no-reranker",
        help="Skip the profile's reranker ([reranker]): the hits keep the mode's own scores.",
    ),
    direct: bool = typer.Option(
        False,
        "--direct",
        help="Encode here and query Qdrant directly (a Qdrant server, or an embedded folder "
        "no worker holds) instead of asking a worker.",
    ),
    config: Path | None = setting_option("config"),
    redis_url: str | None = setting_option("redis_url"),
    qdrant_url: str | None = setting_option("qdrant_url", help_="With --direct: Qdrant server."),
    qdrant_path: Path | None = setting_option(
        "qdrant_path", help_="With --direct: the embedded folder."
    ),
    qdrant_api_key: str | None = setting_option("qdrant_api_key"),
    timeout_s: float = typer.Option(
        30.0,
        "--timeout",
        help="Seconds to wait for a busy worker's answer (with no worker running: at once).",
    ),
) -> None:
    """Search a collection: a table of hits (one per document: its best chunk; --chunks for
    the chunks themselves), or JSON lines with --json; where the profile names a reranker,
    it re-scores the hits (the footer gives its time). Exit status: 0 hits
    (or none) printed; 2 a bad request (flag, filter, collection); 3 no worker running, none
    answering within --timeout, or the search failed in the worker."""
    try:
        text = pick_query(query, query_option)
    except SearchError as e:
        error("search", e)
        raise typer.Exit(2) from None
    direct_run = (
        direct_search(config, redis_url, qdrant_url, qdrant_path, qdrant_api_key)
        if direct
        else None
    )
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
            config=config,
            redis_url=redis_url,
            timeout_s=timeout_s,
            group_by=None if chunks else "doc_id",
            group_size=group_size,
            direct=direct_run,
            reranker=not no_reranker,
        )
    )
