"""The dashboard's JSON API (a contract: keep the paths). Reads return the client's records as
maps; the actions (dead letters' retry and drop, cancel) need the token (:mod:`.auth`) and
answer 401 without it, changing nothing.

``GET /api/overview``, ``GET /api/jobs?status=&collection=&lane=&limit=``,
``GET /api/jobs/{id}``, ``GET /api/workers``, ``GET /api/dlq``, ``GET /api/reindex``,
``POST /api/dlq/retry`` and ``POST /api/dlq/drop`` (body ``{"job_ids": [...]}`` or
``{"all": true}``), ``POST /api/jobs/{id}/cancel``, ``GET /api/search?q=&collection=&mode=&reranker=``.
"""

from __future__ import annotations

import json
import time

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from poolq.ingest.client import NoWorkerError, PoolqClient
from poolq.ingest.dashboard import views
from poolq.ingest.dashboard.auth import authorized
from poolq.ingest.dashboard.jobs import job_detail
from poolq.wire.search_results import SEARCH_MODES, SearchError


def client_of(request: Request) -> PoolqClient:
    client: PoolqClient = request.app.state.client
    return client


def _bad(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def get_overview(request: Request) -> Response:
    return JSONResponse(await request.app.state.live.get(client_of(request).redis))


async def get_jobs(request: Request) -> Response:
    q = request.query_params
    try:
        limit = int(q.get("limit") or 50)
    except ValueError:
        return _bad("limit: expected an integer")
    try:
        jobs = await views.jobs(
            client_of(request),
            status=q.get("status", ""),
            collection=q.get("collection", ""),
            lane=q.get("lane", ""),
            limit=limit,
        )
    except ValueError as e:
        return _bad(str(e))
    return JSONResponse({"jobs": jobs})


async def get_job(request: Request) -> Response:
    job_id = request.path_params["job_id"]
    found = await job_detail(client_of(request).redis, job_id, now=time.time())
    if found is None:
        return _bad(f"no such job: {job_id}", 404)
    return JSONResponse(found)


async def get_workers(request: Request) -> Response:
    return JSONResponse(await views.workers(client_of(request)))


async def get_dlq(request: Request) -> Response:
    return JSONResponse(await views.dead_letters(client_of(request)))


async def get_reindex(request: Request) -> Response:
    return JSONResponse(await views.reindex(client_of(request)))


async def _selection(request: Request) -> list[str] | Response | None:
    """The body's job ids (None: all of them), or the 400 answer."""
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        return _bad('body: expected JSON, {"job_ids": [...]} or {"all": true}')
    if not isinstance(body, dict):
        return _bad('body: expected {"job_ids": [...]} or {"all": true}')
    if body.get("all") is True:
        return None
    ids = body.get("job_ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(j, str) for j in ids):
        return _bad('body: expected {"job_ids": [...]} (a non-empty list of ids) or {"all": true}')
    return ids


async def post_dlq(request: Request) -> Response:
    if request.path_params["action"] not in ("retry", "drop"):
        return _bad("not found: POST /api/dlq/retry or /api/dlq/drop", 404)
    denied = authorized(request, request.app.state.token)
    if denied is not None:
        return denied
    selected = await _selection(request)
    if isinstance(selected, Response):
        return selected
    client = client_of(request)
    try:
        if request.path_params["action"] == "retry":
            retried = await client.dlq_retry(selected)
            return JSONResponse({"retried": [r.to_wire() for r in retried]})
        return JSONResponse({"dropped": await client.dlq_drop(selected)})
    except KeyError as e:
        return _bad(str(e.args[0]), 404)


async def post_cancel(request: Request) -> Response:
    denied = authorized(request, request.app.state.token)
    if denied is not None:
        return denied
    done = await client_of(request).cancel(request.path_params["job_id"])
    return JSONResponse(done.to_wire(), status_code=404 if done.state == "not_found" else 200)


async def get_search(request: Request) -> Response:
    q = request.query_params
    query, collection, mode = q.get("q", ""), q.get("collection", ""), q.get("mode") or None
    if not query.strip() or not collection:
        return _bad("give q (the query) and collection")
    if mode is not None and mode not in SEARCH_MODES:
        return _bad(f"mode: expected one of {', '.join(SEARCH_MODES)}")
    rerank = q.get("reranker", "true").lower()
    if rerank not in ("true", "false"):
        return _bad("reranker: expected true or false")
    t0 = time.perf_counter()
    try:
        result = await views.search(
            client_of(request), request.app.state.direct, query, collection, mode,
            reranker=rerank == "true",
        )  # fmt: skip
    except SearchError as e:
        return _bad(str(e))
    except NoWorkerError as e:
        return _bad(str(e), 503)
    except (TimeoutError, RuntimeError) as e:
        return _bad(str(e), 502)
    latency = round((time.perf_counter() - t0) * 1000, 1)
    return JSONResponse(result.to_dict() | {"latency_ms": latency})


ROUTES = [
    Route("/api/overview", get_overview),
    Route("/api/jobs", get_jobs),
    Route("/api/jobs/{job_id:str}", get_job),
    Route("/api/jobs/{job_id:str}/cancel", post_cancel, methods=["POST"]),
    Route("/api/workers", get_workers),
    Route("/api/dlq", get_dlq),
    Route("/api/dlq/{action:str}", post_dlq, methods=["POST"]),
    Route("/api/reindex", get_reindex),
    Route("/api/search", get_search),
]
