"""The worker's event loop: uvloop where it is installed, else asyncio's own.

Setting ``event_loop`` (``[worker]``, ``POOLQ_EVENT_LOOP``): ``auto`` (default: uvloop when
importable), ``uvloop`` (refused at start when it is not installed) or ``asyncio``.

Why: the event loop spends its CPU on Redis round trips (arq's and the job's bookkeeping) and
on scheduling; uvloop runs both in C (about a fifth less main-thread CPU a chunk at
``bench_host_path.py --server``'s shapes).

Only ``poolq worker`` applies it (``run_worker``), for the process it runs in: arq's
``Worker`` builds its loop with ``asyncio.get_event_loop()`` / ``new_event_loop()``, which
follow the policy installed here; the previous policy is put back when the worker returns.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

EVENT_LOOPS = ("auto", "uvloop", "asyncio")


def check_event_loop(choice: str) -> str:
    """``choice`` if it names a loop this machine can run; ``ValueError`` naming the setting."""
    if choice not in EVENT_LOOPS:
        raise ValueError(f"event_loop: expected one of {', '.join(EVENT_LOOPS)}, got {choice!r}")
    if choice == "uvloop" and importlib.util.find_spec("uvloop") is None:
        raise ValueError(
            "event_loop = 'uvloop': uvloop is not installed (pip install uvloop), "
            "or use 'auto' to run on asyncio's own loop without it"
        )
    return choice


def chosen_loop(choice: str) -> str:
    """The loop ``choice`` runs on here: ``uvloop`` or ``asyncio``."""
    check_event_loop(choice)
    if choice == "asyncio" or importlib.util.find_spec("uvloop") is None:
        return "asyncio"
    return "uvloop"


@contextmanager
def event_loop_policy(choice: str) -> Iterator[str]:
    """Within the block, new event loops are ``chosen_loop(choice)``'s; yields its name."""
    name = chosen_loop(choice)
    if name == "asyncio":
        yield name
        return
    import uvloop

    before = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    try:
        yield name
    finally:
        asyncio.set_event_loop_policy(before)
