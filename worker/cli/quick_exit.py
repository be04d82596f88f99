"""Ending a finished command without the interpreter's teardown.

After ``poolq encode`` has written and closed its output, tearing the interpreter down costs
0.25-0.45 s on a 2-core Xeon: torch deregisters the Python kernels its import registered
(``torch.library``), and OpenVINO's plugin and thread pools unload. Nothing of that is the
user's work. A command that has closed everything it wrote calls :func:`request`;
:func:`end_process` (the console script, after the command) then flushes the standard streams
and the log handlers and ends the process with the command's exit status. Commands that do not
ask, and any run through Typer's test runner, end through the interpreter's usual teardown.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys

_requested = False


def request() -> None:
    """The running command has closed its outputs: the process may end without teardown."""
    global _requested
    _requested = True


def end_process(code: object) -> None:
    """``os._exit`` with ``code`` (a ``SystemExit`` code: None or an int) when :func:`request`
    was called; else nothing (the caller exits as usual)."""
    if not _requested or not (code is None or isinstance(code, int)):
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to deliver
            stream.flush()
    logging.shutdown()
    os._exit(code or 0)
