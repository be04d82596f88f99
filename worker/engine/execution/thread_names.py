"""Names the OS sees for the worker's threads (``/proc/<pid>/task/<tid>/comm``, ``top -H``,
py-spy), so that CPU time can be read per role: ``poolq-compute`` (every CPU forward and its
pooling; OpenMP's team threads, started from it, inherit the name), ``poolq-model`` (an engine's
scheduler loop), ``poolq-tokenize``, ``poolq-store``/``poolq-read`` (the store's threads).
Python names its threads for itself only; Linux takes 15 bytes through ``prctl``. Elsewhere
this does nothing."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable
from functools import partial

_PR_SET_NAME = 15
_libc = None
if sys.platform.startswith("linux"):
    try:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:  # pragma: no cover - no libc to call
        _libc = None


def name_os_thread(name: str) -> None:
    """Give the calling thread ``name`` (cut to 15 bytes) as the OS shows it."""
    if _libc is not None:
        _libc.prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def thread_initializer(name: str) -> Callable[[], None]:
    """An ``initializer`` for a ``ThreadPoolExecutor`` naming its threads ``name``."""
    return partial(name_os_thread, name)
