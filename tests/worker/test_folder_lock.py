"""One worker per embedded folder: ``sinks/folder_lock.py`` between real processes (a child
holds the lock, this process is refused with the child's pid, then gets it once the child is
gone, however it went)."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys

import pytest

from poolq.sinks import folder_lock
from poolq.sinks.folder_lock import LOCK_NAME, FolderLock, FolderLockedError, hold_folder

HOLDER = (
    "import sys, time\n"
    "from poolq.sinks.folder_lock import hold_folder\n"
    "hold_folder(sys.argv[1])\n"
    "print('held', flush=True)\n"
    "time.sleep(120)\n"
)


def holder(folder) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_process_is_refused_naming_the_holder(tmp_path, monkeypatch):
    folder = tmp_path / "missing" / "qdrant"  # created on the way
    child = holder(folder)
    tries: list[int] = []
    real_flock = fcntl.flock

    def counted_flock(fd: int, operation: int) -> None:
        tries.append(operation)
        real_flock(fd, operation)

    monkeypatch.setattr(folder_lock.fcntl, "flock", counted_flock)
    try:
        with pytest.raises(FolderLockedError) as e:
            FolderLock(folder).acquire()
        # refused at once: one try that never blocks, while the holder still runs
        assert tries == [fcntl.LOCK_EX | fcntl.LOCK_NB] and child.poll() is None
        message = str(e.value)
        assert f"held by another worker (pid {child.pid})" in message
        assert repr(str(folder)) in message and "--qdrant-path" in message
        assert "\n" not in message
        assert (folder / LOCK_NAME).read_text().strip() == str(child.pid)
    finally:
        child.send_signal(signal.SIGKILL)  # the kernel drops the lock with the process
        child.wait(10)
    with FolderLock(folder) as lock:
        assert lock.held
        assert (folder / LOCK_NAME).read_text().strip() == str(os.getpid())
    assert not lock.held
    assert (folder / LOCK_NAME).read_text() == ""  # released: no stale pid left


def test_the_process_that_holds_it_gets_the_same_lock_again(tmp_path):
    folder = tmp_path / "q"
    first = hold_folder(folder)
    try:
        assert hold_folder(folder) is first
        assert hold_folder(str(folder) + "/") is first  # the same folder, spelled otherwise
        # and another process is refused while this one holds it
        out = subprocess.run(
            [sys.executable, "-c", HOLDER, str(folder)], capture_output=True, text=True, timeout=60
        )
        assert out.returncode != 0 and f"(pid {os.getpid()})" in out.stderr
    finally:
        first.release()
    assert hold_folder(folder).held
    hold_folder(folder).release()
