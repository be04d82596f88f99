"""Job priority (part of :mod:`poolq.ingest.client`): which lane an enqueue call's jobs take.
Every ingest job gets the keyword argument ``priority`` ("interactive" or "bulk"): the lane its
chunks take in the engines. Where a job goes in arq's queue by its priority (an interactive job
ahead of every bulk job, first come first served among interactive ones), through every later
entry into the queue too, is :mod:`poolq.wire.placement`'s score arithmetic.
"""

from __future__ import annotations

from poolq.wire import constants
from poolq.wire.placement import ARQ_EXPIRES_EXTRA_MS, queue_placement

__all__ = ["ARQ_EXPIRES_EXTRA_MS", "check_priority", "job_priority", "queue_placement"]


def check_priority(priority: object, name: str) -> str:
    """``priority`` if it is one of ``auto``, ``interactive``, ``bulk``, else ``ValueError``
    naming ``name`` (the argument or flag it came from)."""
    if priority not in constants.PRIORITY_CHOICES:
        raise ValueError(
            f"{name}: expected one of {', '.join(constants.PRIORITY_CHOICES)}, got {priority!r}"
        )
    return str(priority)


def job_priority(priority: str, n_jobs: int) -> str:
    """The lane of the jobs of one enqueue call: "auto" is interactive for a call that makes one
    job, bulk for more."""
    if priority == "auto":
        return "interactive" if n_jobs == 1 else "bulk"
    return priority
