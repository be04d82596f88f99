"""The ``poolq`` command line: one module per command, shared options in ``options.py``."""

from __future__ import annotations

import os
import sys

from poolq.worker.cli.openmp_env import openmp_wait_env

try:
    import typer
except ImportError:  # pragma: no cover - a client-only install
    typer = None  # type: ignore[assignment]

if typer is not None:
    from poolq.worker.cli import (  # noqa: F401  (each registers its command on `app`)
        cancel,
        dashboard,
        demo,
        dlq,
        encode,
        enqueue,
        export,
        import_points,
        parse,
        reindex,
        search,
        status,
        worker,
    )
    from poolq.worker.cli.app import app


def main() -> None:
    """The ``poolq`` console script."""
    if typer is None:  # pragma: no cover - a client-only install
        sys.exit("poolq: the command line needs its extra: pip install 'poolq[cli]'")
    os.environ.update(openmp_wait_env(os.environ))  # before any command imports torch
    try:
        app(prog_name="poolq")
    except SystemExit as exc:
        from poolq.worker.cli.quick_exit import end_process

        end_process(exc.code)  # a command that closed its outputs skips the teardown
        raise
