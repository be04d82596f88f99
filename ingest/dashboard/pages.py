"""The dashboard's pages, rendered on the server from the same reads as the API (Jinja2,
autoescaped: a document id or an error holding markup shows as text). Each page's ``<main>``
is also served alone (``?part=main``): the page's script fetches it again every
``REFRESH_S`` (the overview every 2 s) and puts it in place, so the live view needs no
rendering code in the browser."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from poolq.ingest.client import NoWorkerError
from poolq.ingest.dashboard import views
from poolq.ingest.dashboard.api import client_of
from poolq.ingest.dashboard.charts import chart
from poolq.ingest.dashboard.jobs import STATUS_FILTERS, job_detail
from poolq.wire.search_results import SEARCH_MODES, SearchError

TEMPLATES = Path(__file__).parent / "templates"
ENV = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True))
REFRESH_S = {"overview": 2, "jobs": 2, "job": 2, "workers": 2, "dlq": 5, "reindex": 5}


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = max(0, int(seconds))
    return f"{s}s" if s < 120 else f"{s // 60}m" if s < 7200 else f"{s // 3600}h"


def _when(t: float | None) -> str:
    return "—" if not t else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _pretty(value: Any) -> str:
    """A record as indented JSON text (autoescaped where it is shown)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


ENV.filters["ago"] = _ago
ENV.filters["pretty"] = _pretty
ENV.filters["when"] = _when


def render(request: Request, page: str, **data: Any) -> Response:
    part = request.query_params.get("part") == "main"
    template = ENV.get_template(f"{page}.html")
    html = template.render(
        page=page,
        part=part,
        nonce=request.scope["state"]["nonce"],
        read_only=request.app.state.token is None,
        refresh_s=REFRESH_S.get(page, 0),
        now=time.time(),
        **data,
    )
    return HTMLResponse(html)


async def overview_page(request: Request) -> Response:
    data = await request.app.state.live.get(client_of(request).redis)
    now = data["now"]
    charts = [chart(m, data["series"].get(m, []), now) for m in ("depth", *data["counters"])]
    return render(request, "overview", o=data, charts=charts)


async def jobs_page(request: Request) -> Response:
    q = request.query_params
    status = q.get("status", "") if q.get("status", "") in STATUS_FILTERS else ""
    filters = {"status": status, "collection": q.get("collection", ""), "lane": q.get("lane", "")}
    jobs = await views.jobs(client_of(request), limit=100, **filters)
    return render(request, "jobs", jobs=jobs, filters=filters, statuses=STATUS_FILTERS)


async def job_page(request: Request) -> Response:
    job_id = request.path_params["job_id"]
    job = await job_detail(client_of(request).redis, job_id, now=time.time())
    return render(request, "job", job=job, job_id=job_id)


async def workers_page(request: Request) -> Response:
    return render(request, "workers", w=await views.workers(client_of(request)))


async def dlq_page(request: Request) -> Response:
    return render(request, "dlq", d=await views.dead_letters(client_of(request)))


async def reindex_page(request: Request) -> Response:
    return render(request, "reindex", r=await views.reindex(client_of(request)))


async def _one_search(
    request: Request, query: str, collection: str, mode: str | None
) -> dict[str, Any] | None:
    """One column: a mode on its own scores (no reranker), or with ``mode`` None the default
    mode re-scored by the profile's reranker (None: the profile names none, or it failed as
    the modes' columns show)."""
    t0 = time.perf_counter()
    try:
        result = await views.search(
            client_of(request), request.app.state.direct, query, collection, mode,
            reranker=mode is None,
        )  # fmt: skip
    except (SearchError, NoWorkerError, TimeoutError, RuntimeError) as e:
        return {"mode": mode, "error": str(e)} if mode is not None else None
    if mode is None and result.reranker is None:
        return None
    latency = round((time.perf_counter() - t0) * 1000, 1)
    out = {"mode": mode or "reranker", "result": result.to_dict(), "latency_ms": latency}
    if mode is None:
        out["caption"] = f"{result.mode} candidates re-scored by {result.reranker}"
    return out


async def search_page(request: Request) -> Response:
    q = request.query_params
    query, collection = q.get("q", ""), q.get("collection", "")
    found: list[dict[str, Any] | None] = []
    columns: list[str | None] = [*SEARCH_MODES, None]  # None: the reranker's, beside them
    if query.strip() and collection and request.app.state.direct is None:
        # through the workers: every mode at once
        searches = (_one_search(request, query, collection, m) for m in columns)
        found = list(await asyncio.gather(*searches))
    elif query.strip() and collection:  # encoded here (--direct): one mode after the other
        found = [await _one_search(request, query, collection, m) for m in columns]
    results = [r for r in found if r is not None]
    return render(request, "search", query=query, collection=collection, results=results)


ROUTES = [
    Route("/", overview_page),
    Route("/jobs", jobs_page),
    Route("/jobs/{job_id:str}", job_page),
    Route("/workers", workers_page),
    Route("/dlq", dlq_page),
    Route("/reindex", reindex_page),
    Route("/search", search_page),
]
