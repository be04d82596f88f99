"""What the dashboard lets through: state-changing actions need the token, sent as
``Authorization: Bearer TOKEN`` (a header a cross-site form or link cannot send, unlike a
cookie); every response carries a Content-Security-Policy that runs no script but the
dashboard's own file, loaded with a per-response nonce; a request whose ``Host`` is not the
one the dashboard serves is refused (a DNS-rebinding page cannot read it)."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
RISK = (
    "poolq dashboard: warning: serving on {host}, not a local address, without a token: anyone "
    "who can reach it sees every job, document id, error and search result. Actions stay "
    "off without a token; give --token (or POOLQ_DASHBOARD_TOKEN) and put it behind TLS."
)


def is_local(host: str) -> bool:
    """Whether binding ``host`` serves this machine only."""
    if host in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def csp(nonce: str) -> str:
    return (
        "default-src 'none'; "
        f"script-src 'self' 'nonce-{nonce}'; "
        "style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


def authorized(request: Request, token: str | None) -> Response | None:
    """None when the request may act; else the answer: 403 when the dashboard has no token
    (read-only), 401 without the right bearer token."""
    if token is None:
        return JSONResponse(
            {"error": "read-only: the dashboard was started without a token (--token)"},
            status_code=403,
        )
    given = request.headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        value.strip().encode(), token.encode()
    ):
        return JSONResponse(
            {"error": "unauthorized: send Authorization: Bearer TOKEN"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
    return None


class Guard:
    """ASGI middleware: the Host check, then the headers every response carries (the CSP with
    the request's nonce, in ``request.state.nonce``)."""

    def __init__(self, app: Any, *, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = ""
        for k, v in scope.get("headers", []):
            if k == b"host":
                host = v.decode("latin-1")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        name = name.strip("[]")
        if self.hosts and name not in self.hosts:
            await PlainTextResponse("unknown host", status_code=400)(scope, receive, send)
            return
        nonce = secrets.token_urlsafe(16)
        scope.setdefault("state", {})["nonce"] = nonce

        async def headed(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", csp(nonce).encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"cache-control", b"no-store"),
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, headed)
