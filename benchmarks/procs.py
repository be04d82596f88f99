"""Whole-process timing helpers for the benchmarks: each command runs as a user runs it (a fresh
interpreter), timed from just before ``exec`` to the output that matters."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence


def cpu_pressure() -> str:
    """Linux PSI ``some avg10`` (share of the last 10 s some task waited for a CPU): the load
    other users put on a shared machine; "n/a" elsewhere."""
    try:
        with open("/proc/pressure/cpu") as f:
            return f.readline().split()[1].split("=")[1] + "%"
    except (OSError, IndexError):
        return "n/a"


def pressure_avg10() -> float:
    try:
        with open("/proc/pressure/cpu") as f:
            return float(f.readline().split()[1].split("=")[1])
    except (OSError, IndexError, ValueError):
        return 0.0


def cpu_counters() -> tuple[int, int]:
    """(steal, total) jiffies of the ``cpu`` line of ``/proc/stat``; (0, 0) elsewhere."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    return (values[7] if len(values) > 7 else 0), sum(values[:8])


def steal_pct(before: tuple[int, int], after: tuple[int, int]) -> float:
    """CPU steal between two :func:`cpu_counters` readings, in percent of all CPU time."""
    total = after[1] - before[1]
    return 100.0 * (after[0] - before[0]) / total if total > 0 else 0.0


@contextlib.contextmanager
def machine_state() -> Iterator[dict[str, float]]:
    """Fills ``{"load": 1-min load average at the start, "steal": steal % over the block}``."""
    state = {"load": os.getloadavg()[0], "steal": 0.0}
    before = cpu_counters()
    try:
        yield state
    finally:
        state["steal"] = steal_pct(before, cpu_counters())


@contextlib.contextmanager
def busy_neighbour() -> Iterator[int]:
    """A process spinning on one core for the duration of the block (its pid); ended by pid."""
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # let it reach the run queue before what is measured starts
        yield p.pid
    finally:
        p.kill()
        p.wait()


def wait_quiet(threshold: float = 20.0, max_wait_s: float = 120.0) -> float:
    """Wait (at most ``max_wait_s``) until other users' load is low: CPU pressure ``some
    avg10`` under ``threshold`` percent. Returns the pressure when it stopped waiting."""
    deadline = time.monotonic() + max_wait_s
    while (p := pressure_avg10()) >= threshold and time.monotonic() < deadline:
        time.sleep(1.0)
    return p


def first_line_s(cmd: Sequence[str], env: Mapping[str, str], timeout_s: float = 300) -> float:
    """Seconds from start to the first line on stdout; the process is then left to finish."""
    t0 = time.perf_counter()
    with subprocess.Popen(
        list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(env), text=True
    ) as p:
        assert p.stdout is not None
        line = p.stdout.readline()
        t = time.perf_counter() - t0
        _out, err = p.communicate(timeout=timeout_s)
    if p.returncode != 0 or not line:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {err[-2000:]}")
    return t


def line_on_stderr_s(
    cmd: Sequence[str], env: Mapping[str, str], marker: str, timeout_s: float = 300
) -> float:
    """Seconds from start to the first stderr line containing ``marker``; then SIGTERM."""
    t0 = time.perf_counter()
    with subprocess.Popen(
        list(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(env), text=True
    ) as p:
        assert p.stderr is not None
        seen: list[str] = []
        try:
            for line in p.stderr:
                seen.append(line)
                if marker in line:
                    return time.perf_counter() - t0
                if time.perf_counter() - t0 > timeout_s:
                    break
            raise RuntimeError(f"{' '.join(cmd)}: no {marker!r} line: {''.join(seen)[-2000:]}")
        finally:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()


def run_s(cmd: Sequence[str], env: Mapping[str, str], timeout_s: float = 1800) -> float:
    """Seconds for the whole process (start to exit); raises with its stderr on failure."""
    t0 = time.perf_counter()
    r = subprocess.run(list(cmd), capture_output=True, text=True, env=dict(env), timeout=timeout_s)
    t = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-3000:]}")
    return t


def steal_s() -> float:
    """CPU seconds the hypervisor gave other tenants so far (all CPUs, ``/proc/stat``; 0 where
    not reported)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return 0.0
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def process_cpu_s(pid: int, children: bool = True) -> float:
    """CPU seconds (user + system) of process ``pid``, all its threads, and with ``children``
    its live child processes' too (``/proc``; 0.0 for a process gone or elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total = (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14, 15)
    except (OSError, IndexError, ValueError):
        return 0.0
    if children:
        for kid in child_pids(pid):
            total += process_cpu_s(kid)
    return total


def child_pids(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
    return out
