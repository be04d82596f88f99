"""Ending a child process (the dev helpers', the parse process of ``poolq worker --role all``):
a signal, a wait, then SIGKILL if it outlived the wait."""

from __future__ import annotations

import subprocess


def end_process(proc: subprocess.Popen[bytes], sig: int, timeout_s: float) -> int:
    """Send ``sig`` to ``proc`` (if it still runs), wait up to ``timeout_s``, kill it after
    that; its exit status."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(10)
