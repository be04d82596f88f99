"""The Qdrant endpoint (``tests/support/qdrant_endpoint``) as a child process, for the tests and
benchmarks of the server path: ready once it printed the line that names its port."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from poolq.worker.dev.ending import end_process

ROOT = Path(__file__).resolve().parents[2]  # the repository: ``tests.support`` imports from it
_READY = re.compile(r"^qdrant endpoint listening on (\S+):(\d+) \(path (.*)\)$")


def endpoint_env() -> dict[str, str]:
    """This process's environment with the repository first on ``PYTHONPATH``: the endpoint
    (``python -m tests.support.qdrant_endpoint``) is no part of the installed package."""
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return os.environ | {"PYTHONPATH": os.pathsep.join(paths)}


class EndpointProcess:
    """``python -m tests.support.qdrant_endpoint`` on 127.0.0.1 over the folder ``path``;
    ``port`` 0 takes a free one at the first start and keeps it for :meth:`restart`. Its
    stderr goes to ``log`` (by default a file beside the folder)."""

    def __init__(
        self,
        path: str | Path,
        port: int = 0,
        *,
        api_key: str | None = None,
        log: Path | None = None,
    ) -> None:
        self.path = Path(path)
        self.port = port
        self.api_key = api_key
        self.log = log or self.path.parent / f"endpoint-{time.monotonic_ns()}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"grpc://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60.0) -> EndpointProcess:
        cmd = [
            sys.executable, "-m", "tests.support.qdrant_endpoint",
            "--path", str(self.path), "--port", str(self.port),
        ]  # fmt: skip
        if self.api_key:
            cmd += ["--api-key", self.api_key]
        with self.log.open("ab") as err:
            self.proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=err, env=endpoint_env()
            )
        try:
            self.port = self._wait_ready(timeout_s)
        except BaseException:
            self.kill()
            raise
        return self

    def _wait_ready(self, timeout_s: float) -> int:
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"qdrant endpoint not ready after {timeout_s}s:\n{self._tail()}")
            ready, _, _ = select.select([self.proc.stdout], [], [], min(left, 0.5))
            if ready:
                line = self.proc.stdout.readline().decode(errors="replace").strip()
                found = _READY.match(line)
                if found:
                    return int(found.group(2))
                if line:
                    raise RuntimeError(f"qdrant endpoint said {line!r}:\n{self._tail()}")
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"qdrant endpoint exited with {self.proc.returncode}:\n{self._tail()}"
                )

    def _tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-3000:]
        return ""

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM, then wait for the clean exit (SIGKILL after ``timeout_s``); its code."""
        return self._end(signal.SIGTERM, timeout_s)

    def kill(self) -> int:
        """SIGKILL: a crash; what the endpoint acknowledged must survive it."""
        return self._end(signal.SIGKILL, 10.0)

    def _end(self, sig: int, timeout_s: float) -> int:
        if self.proc is None:
            return 0
        rc = end_process(self.proc, sig, timeout_s)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None
        return rc

    def restart(self, timeout_s: float = 60.0) -> EndpointProcess:
        """Start again on the same folder and port (stopped first if it runs)."""
        self.stop()
        return self.start(timeout_s)

    def __enter__(self) -> EndpointProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
