"""The browser tests' helpers: Debian's Chromium driven by Playwright (never a downloaded
browser), and a ``poolq dashboard`` process started as a user starts it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from poolq.worker.dev.local_redis import free_port

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Every run takes the screenshots; `make screenshots` (POOLQ_SCREENSHOTS=docs/images) keeps them
# for the docs, so a plain test run leaves the committed images alone.
IMAGES = Path(
    os.environ.get("POOLQ_SCREENSHOTS")
    or Path(tempfile.gettempdir()) / f"poolq-dashboard-screenshots-{os.getuid()}"
)


def chromium() -> str:
    """Debian's Chromium (``apt-get install chromium``; the CI set-up installs it)."""
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.skip("Chromium is not installed: apt-get install -y chromium")
    return CHROMIUM if Path(CHROMIUM).exists() else str(shutil.which("chromium"))


class DashboardProcess:
    def __init__(self, redis_url: str, *, token: str | None, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "poolq.worker", "dashboard", "--port", str(self.port)]
        cmd += ["--redis-url", redis_url]
        env = {k: v for k, v in os.environ.items() if k != "POOLQ_DASHBOARD_TOKEN"}
        if token:
            env["POOLQ_DASHBOARD_TOKEN"] = token
        self._log = log.open("wb")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url + "/api/overview", timeout=2).read()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(log.read_text()) from None
                time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
