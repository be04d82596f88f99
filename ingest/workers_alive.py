"""Is any worker alive on this Redis? (part of :mod:`poolq.ingest.client`).

A client asks while it waits on a search, and while ``enqueue --wait`` waits, so "no worker" is
answered at once instead of after a timeout (the workers alive:
:func:`poolq.wire.live_workers.live_workers`).
"""

from __future__ import annotations

from poolq.wire.connection import describe_address


class NoWorkerError(TimeoutError):
    """No worker is running on this Redis (a ``TimeoutError``: what waiting would have ended in)."""


def no_worker_message(redis_url: str) -> str:
    return (
        f"no worker is running on this Redis ({describe_address(redis_url)}); "
        "start one with `poolq worker`"
    )
