"""The arq application: settings for arq, its jobs (``jobs/``), the worker's start and stop.

``poolq worker`` runs the worker (a ``PoolqWorker``, ``reliability/arq_overrides.py``); arq's
own CLI, which can only build arq's plain ``Worker``, is refused at start-up. The
``WorkerSettings`` class is built on first use (PEP 562), from ``POOLQ_CONFIG`` and the
``POOLQ_*`` variables, so importing this package reads no configuration.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "WorkerSettings":
        from poolq.worker.app.worker_settings import build_worker_settings

        cls = build_worker_settings()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
