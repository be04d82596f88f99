"""The store process's own side (``process.py`` starts it and forwards the calls): it opens the
folder's :class:`~poolq.sinks.store.edge.EdgeStore` and serves each pipe (one per calling role)
from a thread of its own, in order, replying ``(status, value)``; it dies with its parent and
ignores SIGINT/SIGTERM (the worker drains, then closes the store)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any

from poolq.sinks.store.errors import EdgeError
from poolq.sinks.store.heap import keep_freed_memory
from poolq.sinks.store.process import ROLES
from poolq.sinks.store.process_codec import pack, unpack


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when the worker exits, however it exits."""
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before that took effect
        os._exit(1)


def _reply(conn: Connection, status: str, value: Any) -> None:
    try:
        data = pack((status, value))
    except (TypeError, ValueError) as e:  # a value the codec does not carry: say so, as an error
        data = pack(("error", EdgeError(f"{type(value).__name__}: {value} ({e})")))
    conn.send_bytes(data)


def main() -> None:
    """The child: ``python -m poolq.sinks.store.process_child FOLDER FDS_JSON PARENT_PID``."""
    path, fds = sys.argv[1], json.loads(sys.argv[2])
    _die_with_parent(int(sys.argv[3]))
    keep_freed_memory()  # each call's buffers reuse the pages of the last (heap.py)
    _serve(path, {role: Connection(int(fd)) for role, fd in fds.items()})


def _serve(path: str, conns: dict[str, Connection]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        store = _open(path)
    except Exception as e:
        _reply(conns["write"], "error", e)
        return
    _reply(conns["write"], "ok", None)
    closing = threading.Event()
    threads = [
        threading.Thread(target=_loop, args=(store, conns[r], closing), name=f"poolq-store-{r}")
        for r in ROLES
        if r != "write"
    ]
    for t in threads:
        t.daemon = True
        t.start()
    _loop(store, conns["write"], closing)
    store.close()


def _open(path: str, wait_s: float = 5.0) -> Any:
    """The folder's EdgeStore. Held by another process, it is tried again for ``wait_s``: the
    worker holds the folder's own lock already, so the holder is most likely the store process
    of a worker that was just killed, still on its way out."""
    import time

    from poolq.sinks.store.edge import EdgeStore
    from poolq.sinks.store.errors import StoreLockedError

    deadline = time.monotonic() + wait_s
    while True:
        try:
            return EdgeStore(path)
        except StoreLockedError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def _loop(store: Any, conn: Connection, closing: threading.Event) -> None:
    while not closing.is_set():
        try:
            method, args, kwargs = unpack(conn.recv_bytes())
        except (EOFError, OSError):  # the worker is gone (or closed the store)
            closing.set()
            return
        if method == "close":
            closing.set()
            store.close()  # idempotent: _serve closes it again on its way out
            _reply(conn, "ok", None)
            return
        try:
            value = getattr(store, method)(*args, **kwargs)
        except Exception as e:
            _reply(conn, "error", e)
        else:
            _reply(conn, "ok", value)


if __name__ == "__main__":
    main()
