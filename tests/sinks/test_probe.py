"""The protocol probe (``sinks/store/probe.py``) against a plain HTTP server on this machine:
REST answered with Qdrant's JSON passes; anything else, and gRPC spoken to an HTTP/1.1 port,
is one ``ConnectionError`` naming the address and the transport."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from poolq.sinks.store.probe import check_speaks_qdrant
from poolq.sinks.store.server_target import server_target


def serve(body: dict) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # http.server calls it by this name
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def qdrant_like():
    server = serve({"title": "qdrant - vector search engine", "version": "1.15.5"})
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture
def other_http():
    server = serve({"hello": "world"})
    yield server.server_address[1]
    server.shutdown()


def test_rest_that_answers_as_qdrant_passes(qdrant_like):
    check_speaks_qdrant(server_target(f"http://127.0.0.1:{qdrant_like}", "rest"))


def test_rest_that_is_not_qdrant_is_one_line(other_http):
    with pytest.raises(ConnectionError) as e:
        check_speaks_qdrant(server_target(f"http://127.0.0.1:{other_http}", "rest"))
    text = str(e.value)
    assert f"does not answer REST at 127.0.0.1:{other_http}" in text and "\n" not in text


def test_grpc_on_an_http_port_is_one_line(qdrant_like):
    with pytest.raises(ConnectionError) as e:
        check_speaks_qdrant(server_target(f"grpc://127.0.0.1:{qdrant_like}"), timeout_s=3)
    text = str(e.value)
    assert f"does not answer gRPC at 127.0.0.1:{qdrant_like}" in text and "\n" not in text
    assert "--qdrant-transport rest" in text
