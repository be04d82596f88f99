"""Who a worker process is, for both roles' runtimes: its id, and the heartbeat fields every
worker sends (``wire/records/heartbeat.py``) whatever it runs."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterable
from typing import Any

from poolq.wire.records.heartbeat import Heartbeat


def new_worker_id(role: str = "") -> str:
    """``host-pid[-role]-random``: unique, and names the machine and process to look at."""
    tag = f"-{role}" if role else ""
    return f"{socket.gethostname()}-{os.getpid()}{tag}-{uuid.uuid4().hex[:6]}"


def heartbeat_of(rt: Any, **fields: Any) -> Heartbeat:
    """``rt``'s heartbeat now (its id, process, start and job counters) with ``fields``."""
    return Heartbeat(
        worker_id=rt.worker_id,
        pid=os.getpid(),
        host=socket.gethostname(),
        started_at=rt.started_at,
        seen_at=time.time(),
        jobs_done=rt.jobs_done,
        jobs_failed=rt.jobs_failed,
        jobs_retried=rt.jobs_retried,
        **fields,
    )


def host_load() -> float | None:
    """The host's 1-minute load average over its CPU count (1.0: every CPU busy); None where
    the platform has no load average."""
    try:
        return round(os.getloadavg()[0] / (os.cpu_count() or 1), 3)
    except OSError:
        return None


def engines_device(engines: Iterable[Any]) -> str | None:
    """Where the first engine's model runs ("cpu", "cuda:0"; None: not said)."""
    for e in engines:
        device = getattr(getattr(e, "model", None), "device", None)
        if device is not None:
            return str(device)
    return None
