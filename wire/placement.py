"""Where a job goes in arq's queue by its priority: the one placement every enqueue uses (the
client's, and a parse job handing its documents on as ingest jobs). See
:mod:`poolq.ingest.priority` for the policy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from poolq.wire import constants

# arq's default ArqRedis.expires_extra_ms: a job not started within a day expires
ARQ_EXPIRES_EXTRA_MS = 86_400_000


def queue_placement(
    priority: str, now_s: float, expires_extra_ms: int = ARQ_EXPIRES_EXTRA_MS
) -> dict[str, Any]:
    """The arq ``enqueue_job`` keyword arguments that place a job of ``priority`` in the queue:
    none for bulk (scored by its enqueue time); for interactive a ``_defer_until`` of ``now_s``
    less the head start, and an explicit ``_expires`` (see the module docstring)."""
    if priority != "interactive":
        return {}
    head_start_s = constants.INTERACTIVE_HEAD_START_MS / 1000
    return {
        "_defer_until": datetime.fromtimestamp(now_s - head_start_s, UTC),
        "_expires": timedelta(milliseconds=expires_extra_ms),
    }
