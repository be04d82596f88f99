"""Fetching documents at web URLs against a real local HTTP server (the standard library's,
threaded): redirects followed and bounded, a response slower than the timeout, a 503 then a
success, a body over the byte limit, and poolq's user agent."""

from __future__ import annotations

import asyncio
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from poolq.wire.backoff import Backoff
from poolq.wire.records.codes import ErrorCode
from poolq.worker.fetch.errors import FetchRefused, ObjectGone, SourceUnavailable
from poolq.worker.fetch.web import MAX_REDIRECTS, WebFetcher

BODY = b"<html><head><title>Spare key</title></head><body><p>Under the blue pot.</p></body></html>"


class Handler(BaseHTTPRequestHandler):
    hits: ClassVar[dict[str, int]] = {}
    agents: ClassVar[list[str]] = []

    def log_message(self, *args: object) -> None:
        pass

    def send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        n = self.hits[self.path] = self.hits.get(self.path, 0) + 1
        self.agents.append(self.headers.get("User-Agent", ""))
        if self.path == "/page.html":
            self.send(200, BODY, {"ETag": '"v1"'})
        elif self.path.startswith("/hop/"):
            left = int(self.path.rsplit("/", 1)[-1])
            self.send(302, headers={"Location": "/page.html" if left == 0 else f"/hop/{left - 1}"})
        elif self.path == "/away":  # to another host (the same server, by another name)
            port = self.server.server_address[1]
            self.send(302, headers={"Location": f"http://localhost:{port}/page.html"})
        elif self.path == "/loop":
            self.send(301, headers={"Location": "/loop"})
        elif self.path == "/slow":
            time.sleep(1.5)
            self.send(200, BODY)
        elif self.path == "/flaky":
            self.send(503, b"busy") if n == 1 else self.send(200, BODY)
        elif self.path == "/throttled":
            self.send(429, b"slow down") if n <= 2 else self.send(200, BODY)
        elif self.path == "/big":
            self.send(200, b"x" * 10_000)
        elif self.path == "/big-chunked":  # no Content-Length: the limit is met while reading
            self.send_response(200)
            self.end_headers()
            for _ in range(20):
                self.wfile.write(b"y" * 1000)
            self.close_connection = True
        elif self.path == "/forbidden":
            self.send(403, b"no")
        else:
            self.send(404, b"no such page")


@pytest.fixture
def web():
    Handler.hits, Handler.agents = {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def fetch(
    url: str, *, limit: int = 1 << 20, timeout_s: float = 5.0, budget_s: float = 5.0,
    allowed=None,
):  # fmt: skip
    async def go():
        backoff = Backoff(base_s=0.05, cap_s=0.2, budget_s=budget_s)
        fetcher = WebFetcher(backoff, timeout_s, allowed)
        try:
            return await fetcher.get(url, limit)
        finally:
            await fetcher.close()

    return asyncio.run(go())


def test_redirects_are_followed_up_to_the_bound(web):
    got = fetch(f"{web}/hop/{MAX_REDIRECTS - 1}")
    assert got.data == BODY and got.tag == '"v1"'
    assert Handler.agents[0].startswith("poolq/")
    with pytest.raises(FetchRefused, match=f"more than {MAX_REDIRECTS} redirects"):
        fetch(f"{web}/loop")


def test_a_redirect_out_of_the_allowed_uris_is_refused_unrequested(web):
    inside = lambda url: url.startswith(web + "/")  # noqa: E731
    assert fetch(f"{web}/hop/1", allowed=inside).data == BODY
    Handler.hits.clear()
    with pytest.raises(FetchRefused, match="source_uris") as e:
        fetch(f"{web}/away", allowed=inside)
    assert e.value.code == ErrorCode.FORBIDDEN and "/page.html" not in Handler.hits


def test_a_response_slower_than_the_timeout_is_retried_then_given_up(web):
    t0 = time.monotonic()
    with pytest.raises(SourceUnavailable, match="still failing") as e:
        fetch(f"{web}/slow", timeout_s=0.3, budget_s=1.0)
    assert time.monotonic() - t0 < 5 and Handler.hits["/slow"] >= 2
    assert e.value.uri == f"{web}/slow"


def test_a_503_then_a_success_and_429s_are_retried(web):
    assert fetch(f"{web}/flaky").data == BODY and Handler.hits["/flaky"] == 2
    assert fetch(f"{web}/throttled").data == BODY and Handler.hits["/throttled"] == 3


def test_a_body_over_the_limit_is_refused_with_its_code(web):
    with pytest.raises(FetchRefused) as e:
        fetch(f"{web}/big", limit=5000)
    assert e.value.code == ErrorCode.TOO_LARGE and "10000 bytes" in e.value.message
    with pytest.raises(FetchRefused) as e:
        fetch(f"{web}/big-chunked", limit=5000)
    assert e.value.code == ErrorCode.TOO_LARGE and "more than" in e.value.message
    assert "--max-file-bytes" in e.value.message


def test_a_404_is_gone_and_a_403_is_refused_without_retries(web):
    with pytest.raises(ObjectGone):
        fetch(f"{web}/missing")
    with pytest.raises(FetchRefused, match="HTTP 403"):
        fetch(f"{web}/forbidden")
    assert Handler.hits["/forbidden"] == 1 and Handler.hits["/missing"] == 1
