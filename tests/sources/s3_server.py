"""A real S3 API on this machine: moto's server mode (``ThreadedMotoServer``) on a free port.

Stopping and starting it again keeps its buckets (moto holds them in this process), so a test can
take the store down mid-sync and bring it back on the same port. Objects are written with boto3
(what moto installs), never through poolq. The server keeps a request log (:attr:`S3Server.log`:
every request's method and path), so a test counts what a client fetched.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from typing import Any

import boto3
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server

KEY_ID, SECRET = "poolq-test-key", "poolq-test-secret"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _LoggedServer:
    """moto's WSGI application served from a thread (as moto's ``ThreadedMotoServer`` serves
    it), each request's method and path appended to ``log`` first."""

    def __init__(self, port: int, log: list[tuple[str, str]]) -> None:
        self.port, self.log = port, log
        self.httpd: BaseWSGIServer | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        app = DomainDispatcherApplication(create_backend_app)

        def logged(environ: dict[str, Any], start_response: Any) -> Any:
            path = urllib.parse.unquote(environ.get("PATH_INFO", ""))
            query = environ.get("QUERY_STRING", "")
            self.log.append((environ["REQUEST_METHOD"], path + ("?" + query if query else "")))
            return app(environ, start_response)

        self.httpd = make_server(
            "127.0.0.1", self.port, logged, threaded=True, request_handler=MotoRequestHandler
        )
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        if self.httpd is not None and self.thread is not None:
            self.httpd.shutdown()
            self.thread.join()
            self.httpd.server_close()
            self.httpd = self.thread = None


class S3Server:
    def __init__(self, port: int | None = None, *, process: bool = False) -> None:
        """``process``: moto in a process of its own (the benchmarks: no GIL shared with the
        client); its buckets then go with it when it stops."""
        self.port = port or free_port()
        self.server: _LoggedServer | None = None
        self.log: list[tuple[str, str]] = []  # (method, path?query) of every request served
        self.process: subprocess.Popen[bytes] | None = None
        self.in_process = not process

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """What a worker (or the CLI) needs to reach it: the standard AWS variables only."""
        return {
            "AWS_ACCESS_KEY_ID": KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    def start(self) -> S3Server:
        if self.in_process:
            self.server = _LoggedServer(self.port, self.log)
            self.server.start()
        else:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"moto did not start on port {self.port}")

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None

    def reset(self) -> None:
        """Forget every bucket (moto keeps them in this process across servers)."""
        req = urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST")
        urllib.request.urlopen(req, timeout=10).close()

    def object_gets(self, bucket: str, prefix: str = "") -> list[str]:
        """The keys under ``prefix`` fetched (GET of one object, not a listing) since the log
        was last cleared, in the order served."""
        base = f"/{bucket}/{prefix}"
        return [p[len(f"/{bucket}/") :] for m, p in self.log if m == "GET" and p.startswith(base)]

    def client(self) -> Any:
        return boto3.client(
            "s3", endpoint_url=self.endpoint, region_name=REGION,
            aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
        )  # fmt: skip

    def bucket(self, name: str) -> Any:
        c = self.client()
        c.create_bucket(Bucket=name)
        return c

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
