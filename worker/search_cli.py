"""``poolq search``: through a running worker (default; the only way in embedded mode, where the
worker owns the Qdrant folder), or ``--direct`` (encode here, query Qdrant here)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sinks.search import SearchError, SearchRequest, SearchResult


def _one_line(text: str | None, width: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"


def format_table(result: SearchResult) -> str:
    width = shutil.get_terminal_size((120, 24)).columns
    rows = [("#", "score", "doc_id", "chunk", "text")]
    for i, h in enumerate(result.hits, 1):
        rows.append((str(i), f"{h.score:.4f}", str(h.doc_id), str(h.chunk_index), h.text or ""))
    w = [max(len(r[k]) for r in rows) for k in range(4)]
    w[2] = min(w[2], 40)
    text_w = max(20, width - sum(w) - 8)
    lines = [
        "  ".join(
            (
                r[0].rjust(w[0]),
                r[1].rjust(w[1]),
                _one_line(r[2], w[2]).ljust(w[2]),
                r[3].rjust(w[3]),
                _one_line(r[4], text_w),
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
    from worker.query import QueryService
    from worker.runtime import open_writer
    from worker.vectorizer import Vectorizer

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
    from ingest.client import PoolqClient

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
) -> int:
    from worker.settings import load_settings

    try:
        settings = load_settings(
            config,
            {
                "redis_url": redis_url,
                "qdrant_url": qdrant_url,
                "qdrant_path": str(qdrant_path) if qdrant_path else None,
                "qdrant_api_key": qdrant_api_key,
            },
        )
        request = SearchRequest(
            collection,
            mode,  # type: ignore[arg-type]
            limit,
            tuple(filters),
            score_threshold,
            fusion,  # type: ignore[arg-type]
        )
        if direct:
            result = asyncio.run(_direct(query, request, settings))
        else:
            result = asyncio.run(_via_worker(query, request, settings.redis_url, timeout_s))
    except (SearchError, ValueError) as e:
        print(f"poolq search: error: {e}", file=sys.stderr)
        return 2
    except (TimeoutError, ConnectionError, OSError) as e:
        print(f"poolq search: error: {e}", file=sys.stderr)
        return 3
    if as_json:
        for line in json_lines(result):
            print(line)
    else:
        print(format_table(result))
    print(
        f"poolq search: {len(result.hits)} hits, mode {result.mode}, "
        f"encode {result.encode_s * 1000:.0f} ms, search {result.search_s * 1000:.0f} ms",
        file=sys.stderr,
    )
    return 0
