"""Keeping freed memory in the process (glibc's ``mallopt``), for processes that move large
buffers: a worker encoding upserts (a request of 128 points of 92 x 128 rows is 6 MB, built
from 47 KB row tables) and the embedded store's process (its calls arrive as buffers of that
size).

By default glibc serves a large block with ``mmap`` and returns the top of the heap to the
kernel once more than a threshold is free, so every request of that size faults its pages in
again (about half the CPU of encoding it). The thresholds set here keep up to ``keep_mb`` of
freed memory for the next request instead; the process's resident size then stays at its peak
rather than falling back between requests. Elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

log = logging.getLogger(__name__)
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
_MMAP_MAX_BYTES = 32 << 20  # glibc's ceiling for M_MMAP_THRESHOLD on 64-bit


def keep_freed_memory(keep_mb: int = 512) -> bool:
    """Blocks below 32 MB come from the heap, and up to ``keep_mb`` of free heap is kept;
    True where it took effect (glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    ok = (
        mallopt(_M_MMAP_THRESHOLD, _MMAP_MAX_BYTES)
        and mallopt(_M_TRIM_THRESHOLD, keep_mb << 20)
        and mallopt(_M_TOP_PAD, 64 << 20)
    )
    if not ok:
        log.debug("mallopt refused the heap thresholds")
    return bool(ok)
