"""A ``poolq worker`` child process, started as a user would start it (the demo, the
integration tests and the benchmarks use it); ready once its heartbeat is in Redis."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis

from poolq.wire import constants
from poolq.wire.records.heartbeat import read_heartbeat
from poolq.worker.dev.ending import end_process


class WorkerProcess:
    def __init__(
        self,
        redis_url: str,
        qdrant_path: Path,
        *args: str,
        log: Path | None = None,
        env: dict[str, str] | None = None,
        qdrant_url: str | None = None,
    ) -> None:
        """``qdrant_url``: a Qdrant server (``--qdrant-url``) instead of the embedded folder
        ``qdrant_path`` (which then only places the log)."""
        self.redis_url = redis_url
        self.qdrant_path = qdrant_path
        self.qdrant_url = qdrant_url
        self.args = list(args)
        self.log = log or qdrant_path.parent / f"worker-{time.monotonic_ns()}.log"
        self.env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            **(env or {}),
        }
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, ready_timeout_s: float = 120) -> WorkerProcess:
        cmd = [
            sys.executable,
            "-m",
            "poolq.worker",
            "worker",
            "--redis-url",
            self.redis_url,
            *(
                ("--qdrant-url", self.qdrant_url)
                if self.qdrant_url
                else ("--qdrant-path", str(self.qdrant_path))
            ),
            *self.args,
        ]
        self._log_f = self.log.open("ab")
        self.proc = subprocess.Popen(
            cmd, env=self.env, stdout=self._log_f, stderr=subprocess.STDOUT
        )
        self.wait_ready(ready_timeout_s)
        return self

    def heartbeats(self) -> list[dict[str, Any]]:
        """Every worker's heartbeat in this Redis, as maps (decoded through the record)."""
        r = redis.Redis.from_url(self.redis_url)
        try:
            raws = [r.get(k) for k in r.scan_iter(match=constants.HEARTBEAT_PATTERN)]
            beats = [read_heartbeat(raw) for raw in raws if isinstance(raw, bytes)]
            return [h.to_wire() for h in beats if h is not None]
        finally:
            r.close()

    def wait_ready(self, timeout_s: float) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"worker exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}"
                )
            if any(h.get("pid") == self.proc.pid for h in self.heartbeats()):
                return
            time.sleep(0.1)
        raise TimeoutError(f"worker not ready after {timeout_s}s:\n{self.log.read_text()[-3000:]}")

    def stats(self) -> dict:
        assert self.proc is not None
        for h in self.heartbeats():
            if h.get("pid") == self.proc.pid:
                return h
        raise LookupError("no heartbeat for this worker")

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 60) -> int:
        if self.proc is None:
            return 0
        children = _children(self.proc.pid)  # its store process (sinks/store/process.py)
        rc = end_process(self.proc, sig, timeout_s)
        _wait_gone(children)  # killed with the worker: gone, and its locks with it
        self._log_f.close()
        self.proc = None
        return rc

    def __enter__(self) -> WorkerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _children(pid: int) -> list[int]:
    """Linux: the pids of a process's children (empty elsewhere)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            out += [int(c) for c in task.read_text().split()]
    return out


def _wait_gone(pids: list[int], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except (ProcessLookupError, PermissionError):  # gone, or a pid another user reuses
                break
            time.sleep(0.02)
