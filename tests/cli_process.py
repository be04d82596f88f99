"""The ``poolq`` command line as a user runs it: a fresh ``python -m poolq.worker`` process."""

from __future__ import annotations

import subprocess
import sys


def poolq(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``poolq ARGS...`` and return its exit status, stdout and stderr (text)."""
    return subprocess.run(
        [sys.executable, "-m", "poolq.worker", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
