"""The dashboard's Starlette application (:func:`create_app`) and its server (:func:`serve`,
``poolq dashboard``). One :class:`~poolq.ingest.client.PoolqClient` serves every request; the
application imports no worker code, torch or Qdrant client (searches go through the workers,
as ``poolq search`` does), unless it is given ``direct``: ``poolq dashboard --direct`` passes
``poolq search --direct``'s search, which encodes in this process and queries Qdrant itself."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.responses import FileResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from poolq.ingest.client import PoolqClient
from poolq.ingest.dashboard import api, pages
from poolq.ingest.dashboard.auth import LOCAL_NAMES, RISK, Guard, is_local
from poolq.ingest.dashboard.live import LiveOverview

if TYPE_CHECKING:
    from poolq.ingest.cli.search import DirectSearch

STATIC = Path(__file__).parent / "static"
SVG = "image/svg+xml"  # the icon (static/icon.svg), also at /favicon.ico for what asks there
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765


def create_app(
    redis_url: str,
    *,
    token: str | None = None,
    host: str = DEFAULT_HOST,
    direct: DirectSearch | None = None,
) -> Guard:
    """The dashboard for the Redis at ``redis_url``. ``token``: what actions need (None:
    read-only); ``host``: the address served, the one ``Host`` accepted besides the local
    names (any, when it is 0.0.0.0 or ::); ``direct``: searches run with it instead of
    through the workers."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.client = await PoolqClient(redis_url).connect()
        try:
            yield
        finally:
            await app.state.client.close()

    icon = Route("/favicon.ico", lambda _: FileResponse(STATIC / "icon.svg", media_type=SVG))
    app = Starlette(
        routes=[
            *api.ROUTES,
            *pages.ROUTES,
            icon,
            Mount("/static", StaticFiles(directory=STATIC)),
        ],
        lifespan=lifespan,
    )
    app.state.token = token or None
    app.state.live = LiveOverview()  # the overview's shared tick (live.py)
    app.state.direct = direct
    hosts = frozenset() if host in ("0.0.0.0", "::", "") else frozenset({*LOCAL_NAMES, host})
    return Guard(app, hosts=hosts)


def url_of(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    return f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/"


def serve(
    redis_url: str,
    *,
    host: str,
    port: int,
    token: str | None,
    direct: DirectSearch | None = None,
) -> None:
    """Serve until interrupted; warns on stderr when a non-local address is served without a
    token (:data:`~poolq.ingest.dashboard.auth.RISK`)."""
    import uvicorn

    if not is_local(host) and not token:
        print(RISK.format(host=host), file=sys.stderr)
    mode = "actions need the token" if token else "read-only (no --token)"
    print(f"poolq dashboard: {url_of(host, port)} ({mode})", file=sys.stderr, flush=True)
    uvicorn.run(
        create_app(redis_url, token=token, host=host, direct=direct),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
    )
