"""How many intra-op (OpenMP) threads the CPU forward should run: the CPUs this process may
really use, less what its own other threads need, less the cores its neighbours hold now.

Why: torch's CPU operators end in a barrier. With as many threads as cores and one core held
by another process, every operator waits for the thread that lost its core (a scheduler time
slice, milliseconds), and each of a forward's hundreds of operators can pay that wait; one
thread per free core has no barrier to wait at. ``benchmarks/bench_contention.py`` measures
it against sentence-transformers, quiet and beside a busy process.

The budget, in CPUs: ``min(len(sched_getaffinity), cgroup quota)`` (cgroup v2 ``cpu.max``, v1
``cpu.cfs_quota_us / cpu.cfs_period_us``), less ``reserved_cpus`` (the tokenizer thread, the
event loop, the store writer), less the CPU time other processes (and the hypervisor: steal)
took on our CPUs over a short window (``/proc/stat`` minus this process's own CPU time). The
thread count is that budget rounded, at least 1. An explicit count (the setting ``threads``:
``--threads``, ``POOLQ_THREADS`` or the config; else ``OMP_NUM_THREADS``) always wins and is
never changed.

:mod:`cpu_threads` applies the choice, and re-measures while the engine runs.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Self

# CPUs left to the process's other threads (estimates, not measured: they only tip a budget
# that is nearly a whole CPU short of the next thread, see choose_threads)
RESERVED_ENCODE_CPUS = 0.1  # poolq encode: one tokenizer thread and the event loop
RESERVED_WORKER_CPUS = 0.3  # a worker: + arq/msgpack and the store writer
PROBE_S = 0.2  # the start-up window when nothing else is measured meanwhile
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal (guest is in user)


# What this process may use --------------------------------------------------------------------
def affinity_cpus(getaffinity: Callable[[int], Iterable[int]] | None = None) -> set[int]:
    """The CPU ids this process may run on (all online CPUs where affinity is unknown)."""
    get = getaffinity or getattr(os, "sched_getaffinity", None)
    if get is None:
        return set(range(os.cpu_count() or 1))
    return set(get(0))


def _quota(text: str) -> float | None:
    """cgroup v2 ``cpu.max`` (``"max 100000"`` or ``"200000 100000"``) -> CPUs or None."""
    parts = text.split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    quota, period = int(parts[0]), int(parts[1])
    return quota / period if quota > 0 and period > 0 else None


def _quota_v1(folder: Path) -> float | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None


def _ancestors(root: Path, rel: str) -> list[Path]:
    """``root/a/b``, ``root/a``, ``root``: a limit anywhere above this cgroup applies."""
    parts = [p for p in rel.strip("/").split("/") if p]
    return [root.joinpath(*parts[:i]) for i in range(len(parts), -1, -1)]


def cgroup_quota_cpus(
    root: Path = Path("/sys/fs/cgroup"), proc_cgroup: Path = Path("/proc/self/cgroup")
) -> float | None:
    """The tightest CPU quota over this process's cgroup and its ancestors, in CPUs (1.5: one
    and a half CPUs of time per period); None when unlimited or unknown. cgroup v2 (``0::/path``
    and ``cpu.max``) first, then v1 (the ``cpu`` controller's ``cpu.cfs_quota_us``)."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    limits: list[float] = []
    for line in lines:
        hid, controllers, rel = [*line.split(":", 2), "", ""][:3]
        if hid == "0" and controllers == "":  # v2 unified hierarchy
            for folder in _ancestors(root, rel):
                try:
                    q = _quota((folder / "cpu.max").read_text())
                except OSError:
                    continue  # a namespaced path that is not mounted as such: try higher up
                if q is not None:
                    limits.append(q)
        elif "cpu" in controllers.split(","):  # v1: mounted as cpu, cpu,cpuacct, ...
            for mount in (root / controllers, root / "cpu", root / "cpu,cpuacct"):
                if mount.is_dir():
                    limits += [q for f in _ancestors(mount, rel) if (q := _quota_v1(f))]
                    break
    return min(limits) if limits else None


# What the neighbours take now -----------------------------------------------------------------
def parse_proc_stat(text: str, cpus: set[int]) -> tuple[int, int]:
    """(busy jiffies, all jiffies) summed over the ``cpuN`` lines of ``cpus`` in
    ``/proc/stat``; busy counts steal (the hypervisor gave the CPU to someone else)."""
    busy = total = 0
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *fields = line.split()
        if int(name[3:]) not in cpus:
            continue
        values = [int(v) for v in fields[:8]]
        busy += sum(values[i] for i in _BUSY_FIELDS if i < len(values))
        total += sum(values)
    return busy, total


@dataclass(frozen=True)
class CpuSample:
    wall_s: float
    busy_s: float  # all processes' CPU time on our CPUs (incl. steal), in seconds
    own_s: float  # this process's CPU time, all threads

    @classmethod
    def now(cls, cpus: set[int], stat_path: Path = Path("/proc/stat")) -> CpuSample | None:
        try:
            busy, _total = parse_proc_stat(stat_path.read_text(), cpus)
        except (OSError, ValueError):
            return None  # not Linux, or /proc hidden
        return cls(time.monotonic(), busy / os.sysconf("SC_CLK_TCK"), time.process_time())


def busy_elsewhere(before: CpuSample, after: CpuSample) -> float:
    """CPUs that other processes (and steal) held between two samples, >= 0."""
    wall = after.wall_s - before.wall_s
    if wall <= 0:
        return 0.0
    other = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    return max(0.0, other / wall)


# The choice ----------------------------------------------------------------------------------
def choose_threads(cpus: float, reserved: float, elsewhere: float) -> int:
    """Round(usable CPUs), at least 1: two threads need a second CPU more than half free.
    ``cpus``: what this process may use (affinity, quota); ``reserved``: its other threads;
    ``elsewhere``: what neighbours hold now."""
    usable = cpus - reserved - elsewhere
    return max(1, math.floor(usable + 0.5))


def explicit_threads(
    threads: int | None, environ: Mapping[str, str] | None = None
) -> tuple[int, str] | None:
    """(threads, where it came from) when the user chose: the setting ``threads`` (loaded from
    its flag, ``POOLQ_THREADS`` or the config), else ``OMP_NUM_THREADS``; else None (chosen). A
    bad value is a one-line error naming it."""
    env = os.environ if environ is None else environ
    for source, raw in (
        ("threads", None if threads is None else str(threads)),
        ("OMP_NUM_THREADS", env.get("OMP_NUM_THREADS")),
    ):
        if raw is None or not raw.strip():
            continue
        try:
            n = int(raw.split(",")[0])  # OMP_NUM_THREADS may list nested levels: "2,1"
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"{source}: expected a positive integer, got {raw!r}")
        return n, source
    return None


@dataclass(frozen=True)
class CpuBudget:
    threads: int
    source: str  # "auto", "threads" (the setting) or "OMP_NUM_THREADS"
    affinity: int
    quota: float | None
    reserved: float
    elsewhere: float | None  # measured CPUs held by others (None: explicit, or not measurable)

    @property
    def cpus(self) -> float:
        return min(float(self.affinity), self.quota or math.inf)

    def summary(self) -> str:
        if self.source != "auto":
            return f"{self.threads} intra-op threads ({self.source})"
        quota = "none" if self.quota is None else f"{self.quota:g}"
        held = "n/a" if self.elsewhere is None else f"{self.elsewhere:.2f}"
        return (
            f"{self.threads} intra-op threads (auto: {self.affinity} CPUs in affinity, cgroup "
            f"quota {quota}, {self.reserved:g} reserved, {held} held by other processes)"
        )


def plan(
    cpus: set[int],
    quota: float | None,
    reserved: float,
    elsewhere: float | None,
    explicit: tuple[int, str] | None,
) -> CpuBudget:
    if explicit is not None:
        return CpuBudget(explicit[0], explicit[1], len(cpus), quota, reserved, None)
    budget = min(float(len(cpus)), quota or math.inf)
    threads = choose_threads(budget, reserved, elsewhere or 0.0)
    return CpuBudget(threads, "auto", len(cpus), quota, reserved, elsewhere)


class StartProbe:
    """Start-up: :meth:`start` early (a first sample), :meth:`choose` once the model is loaded
    (the window then costs no time unless it is shorter than ``PROBE_S``). Applying the choice
    is the caller's: torch's thread count (``cpu_threads.py``), or OpenVINO's compile settings
    for an encode that imports no torch (``runtime/direct_encode.py``)."""

    def __init__(self, cpus: set[int], first: CpuSample | None) -> None:
        self.cpus = cpus
        self.first = first

    @classmethod
    def start(cls) -> Self:
        cpus = affinity_cpus()
        return cls(cpus, CpuSample.now(cpus))

    def choose(self, explicit: tuple[int, str] | None, reserved: float) -> CpuBudget:
        """The budget: ``explicit`` (:func:`explicit_threads`) when given, else measured."""
        elsewhere = None
        if explicit is None and self.first is not None:
            left = PROBE_S - (time.monotonic() - self.first.wall_s)
            if left > 0:
                time.sleep(left)
            after = CpuSample.now(self.cpus)
            elsewhere = busy_elsewhere(self.first, after) if after is not None else None
        return plan(self.cpus, cgroup_quota_cpus(), reserved, elsewhere, explicit)
