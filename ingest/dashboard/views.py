"""What the dashboard's pages and API show besides the overview and the jobs (:mod:`.overview`,
:mod:`.jobs`): the workers' heartbeats with what each page derives from them, the dead letters
with their progress, the reindexes and their schedules. Each is a map of the client's records
(``to_wire()``), read through :class:`~poolq.ingest.client.PoolqClient`."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from poolq.ingest.client import PoolqClient
from poolq.ingest.dashboard.jobs import list_jobs
from poolq.ingest.job_progress import read_progress
from poolq.wire.records.heartbeat import Heartbeat
from poolq.wire.search_results import SearchRequest, SearchResult


def engine_figures(h: Heartbeat) -> dict[str, Any]:
    """Per model: batch fill (mean tokens a batch over the largest batch), tokens in flight
    (queued in the engine), batches and mean batch tokens."""
    out = {}
    for model, stats in h.engines.items():
        mean = float(stats.get("mean_batch_tokens") or 0.0)
        fill = round(mean / h.max_batch_tokens, 3) if h.max_batch_tokens else None
        out[model] = {
            "batches": int(stats.get("batches") or 0),
            "mean_batch_tokens": mean,
            "fill": fill,
            "in_flight_tokens": int(stats.get("queued_tokens") or 0),
            "precision": h.precision.get(model),
        }
    return out


def padding(h: Heartbeat) -> str:
    """The torch backend packs batches without padding; OpenVINO pads to its shape buckets."""
    return "bucketed (padded to shape buckets)" if h.backend == "openvino" else "none (packed)"


async def workers(client: PoolqClient) -> dict[str, Any]:
    """``GET /api/workers``: ``workers`` (heartbeat maps), and per worker id its
    ``heartbeat_age_s``, ``engines`` (:func:`engine_figures`) and ``padding``."""
    now = time.time()
    beats = await client.workers()
    derived = {
        h.worker_id: {
            "heartbeat_age_s": round(now - h.seen_at, 1) if h.seen_at else None,
            "engines": engine_figures(h),
            "padding": padding(h),
        }
        for h in beats
    }
    return {"now": now, "workers": [h.to_wire() for h in beats], "derived": derived}


async def dead_letters(client: PoolqClient) -> dict[str, Any]:
    """``GET /api/dlq``: ``entries`` (dead-letter maps, oldest first) and ``progress`` (job id
    -> its progress map, for those whose record is still kept)."""
    entries = await client.dead_letters()
    progress = await read_progress(client.redis, [e.job_id for e in entries])
    return {
        "entries": [e.to_wire() for e in entries],
        "progress": {j: p.to_wire() for j, p in progress.items()},
    }


async def reindex(client: PoolqClient) -> dict[str, Any]:
    """``GET /api/reindex``: ``progress`` (each collection's latest reindex) and ``schedules``
    (each live worker's scheduled reindexes with their next run, once per collection and
    source)."""
    progress = await client.reindex_progress()
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for h in await client.live_workers():
        for s in h.schedules:
            seen.setdefault((s.collection, s.source, s.cron), s.to_wire())
    return {"progress": [p.to_wire() for p in progress], "schedules": list(seen.values())}


async def jobs(
    client: PoolqClient, *, status: str, collection: str, lane: str, limit: int
) -> list[dict[str, Any]]:
    live = [h.worker_id for h in await client.workers() if h.alive]
    return await list_jobs(
        client.redis,
        status=status,
        collection=collection,
        lane=lane,
        limit=limit,
        now=time.time(),
        live=live,
    )


async def search(
    client: PoolqClient,
    direct: Any,
    query: str,
    collection: str,
    mode: Any,
    *,
    reranker: bool = True,
) -> SearchResult:
    """One search through the workers (as ``poolq search``), or with ``direct`` (``poolq
    search --direct``'s search, run in a thread: it encodes and queries here). ``reranker``:
    whether the profile's reranker, if any, re-scores the hits."""
    if direct is None:
        return await client.search(query, collection, mode=mode, reranker=reranker, timeout_s=30.0)
    request = SearchRequest(collection, mode, group_by="doc_id", reranker=reranker)
    result: SearchResult = await asyncio.to_thread(direct, query, request)
    return result
