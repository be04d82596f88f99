"""The parse role of ``poolq worker``: ``--role parse`` runs the parse worker alone (no torch
import), and ``--role all`` starts it as a process of its own beside the encode worker.

The parse process of ``--role all`` dies with its parent (``PR_SET_PDEATHSIG`` on Linux, and a
SIGTERM from the parent's exit otherwise), so a killed worker leaves no orphan parsing files.
With ``--burst`` the parse worker drains its queue first and the encode worker then drains the
documents it handed on, so that a burst run ends with every file written.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from poolq.worker.cli.options import fail
from poolq.worker.dev.ending import end_process


def run_parse_role(config: Path | None, flags: dict[str, Any], *, burst: bool) -> None:
    """``--role parse``: settings, Redis answering, then the parse worker."""
    from redis.exceptions import RedisError

    from poolq.wire.connection import probe_redis
    from poolq.worker.config.parse_settings import load_parse_settings

    try:
        settings = load_parse_settings(config, flags)
    except ValueError as exc:
        fail("worker", exc)
    try:
        probe_redis(settings.redis_url)
    except (ConnectionError, OSError) as exc:
        fail("worker", exc, 1)
    from poolq.worker.app.parse_worker import run_parse_worker

    try:
        run_parse_worker(settings, burst=burst)
    except (RedisError, ConnectionError) as exc:
        fail("worker", exc, 1)


def parse_command(
    config: Path | None, flags: dict[str, Any], log_format: str, *, burst: bool
) -> list[str]:
    """The parse process of ``--role all``: ``poolq worker --role parse`` with the same config
    file and the parse stage's flags of this command (its environment is inherited)."""
    from poolq.worker.cli.options import flag_of
    from poolq.worker.config.parse_settings import ParseSettings

    cmd = [sys.executable, "-m", "poolq.worker", "worker", "--role", "parse"]
    cmd += ["--log-format", log_format]
    if config is not None:
        cmd += ["--config", str(config)]
    for f in fields(ParseSettings):
        if (value := flags.get(f.name)) is not None:
            cmd += [flag_of(f.name), str(value)]
    return [*cmd, "--burst"] if burst else cmd


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def parse_process(
    config: Path | None, flags: dict[str, Any], log_format: str, *, burst: bool
) -> Iterator[None]:
    """``--role all``: the parse worker in a process of its own while the block runs (with
    ``burst``, run to its end first)."""
    cmd = parse_command(config, flags, log_format, burst=burst)
    if burst:
        subprocess.run(cmd, check=False, preexec_fn=_die_with_parent)
        yield
        return
    proc = subprocess.Popen(cmd, preexec_fn=_die_with_parent)
    try:
        yield
    finally:
        end_process(proc, signal.SIGTERM, (flags.get("shutdown_grace_s") or 30) + 10)
