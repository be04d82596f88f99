"""A real S3 API on this machine: moto's server mode (``ThreadedMotoServer``) on a free port.

Stopping and starting it again keeps its buckets (moto holds them in this process), so a test can
take the store down mid-sync and bring it back on the same port. Objects are written with boto3
(what moto installs), never through poolq.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

KEY_ID, SECRET = "poolq-test-key", "poolq-test-secret"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class S3Server:
    def __init__(self, port: int | None = None, *, process: bool = False) -> None:
        """``process``: moto in a process of its own (the benchmarks: no GIL shared with the
        client); its buckets then go with it when it stops."""
        self.port = port or free_port()
        self.server: ThreadedMotoServer | None = None
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
            self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
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
