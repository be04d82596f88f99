"""One worker per embedded store folder: an exclusive ``flock`` on ``FOLDER/.poolq.lock``.

A worker takes it before it loads any model and holds it for its lifetime (the kernel drops it
when the process exits, however it exits), so a second worker on the same folder is refused in
well under a second with one line naming the holder's pid, instead of failing after loading its
models. The lock is poolq's own: it does not depend on which store library opens the folder
(that library may take a lock of its own as well).
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

LOCK_NAME = ".poolq.lock"


class FolderLockedError(RuntimeError):
    """Another process holds the folder; the message is one line naming it and the holder."""


class FolderLock:
    """An exclusive lock on ``folder`` (created if missing), held until :meth:`release`."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> FolderLock:
        """Take the lock at once or raise :class:`FolderLockedError` (never waits)."""
        if self._fd is not None:
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"pid {holder}" if holder else "pid unknown"
            raise FolderLockedError(
                f"the embedded Qdrant folder {str(self.folder)!r} is held by another worker "
                f"({who}); one folder serves one worker: stop that one, give this one its own "
                "--qdrant-path, or share a Qdrant server (--qdrant-url)"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


_held: dict[str, FolderLock] = {}
_held_lock = threading.Lock()


def hold_folder(folder: str | os.PathLike[str]) -> FolderLock:
    """This process's lock on ``folder``, taken on the first call and held until the process
    exits (later calls for the same folder return it: ``poolq worker`` takes it before loading
    models, the worker's start-up takes it again under ``arq ...WorkerSettings``)."""
    key = os.path.realpath(folder)
    with _held_lock:
        lock = _held.get(key)
        if lock is None or not lock.held:
            lock = _held[key] = FolderLock(folder).acquire()
        return lock
