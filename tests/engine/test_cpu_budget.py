"""The CPU budget: affinity and cgroup quota parsed from fixture files, neighbours measured from
``/proc/stat`` counters, the thread choice, explicit settings winning, the governor following
neighbours that come and go without flapping."""

import os
from pathlib import Path

import pytest

from poolq.worker.cli.openmp_env import SPIN_COUNT, openmp_wait_env
from poolq.worker.engine.cpu.cpu_budget import (
    CpuSample,
    affinity_cpus,
    busy_elsewhere,
    cgroup_quota_cpus,
    choose_threads,
    explicit_threads,
    parse_proc_stat,
    plan,
)
from poolq.worker.engine.cpu.cpu_threads import ThreadGovernor


def _cgroup_v2(tmp_path: Path, rel: str, limits: dict[str, str]) -> tuple[Path, Path]:
    """A cgroup2 mount under ``tmp_path/fs`` with ``cpu.max`` files at the given folders."""
    root = tmp_path / "fs"
    for folder, text in limits.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "cpu.max").write_text(text + "\n")
    (proc := tmp_path / "cgroup").write_text(f"0::{rel}\n")
    return root, proc


def test_cgroup_v2_quota_is_the_tightest_on_the_path(tmp_path):
    root, proc = _cgroup_v2(
        tmp_path,
        "/system.slice/job.service",
        {
            "": "max 100000",
            "system.slice": "300000 100000",
            "system.slice/job.service": "150000 100000",
        },
    )
    assert cgroup_quota_cpus(root, proc) == 1.5
    root, proc = _cgroup_v2(tmp_path / "b", "/a", {"": "max 100000", "a": "50000 100000"})
    assert cgroup_quota_cpus(root, proc) == 0.5


def test_cgroup_v2_unlimited_and_namespaced(tmp_path):
    root, proc = _cgroup_v2(tmp_path, "/", {"": "max 100000"})
    assert cgroup_quota_cpus(root, proc) is None
    # in a container the path names the host's folder, which is not mounted: the root holds it
    root, proc = _cgroup_v2(tmp_path / "c", "/kubepods/pod1/abc", {"": "200000 100000"})
    assert cgroup_quota_cpus(root, proc) == 2.0


def test_cgroup_v1_quota(tmp_path):
    mount = tmp_path / "fs" / "cpu,cpuacct" / "docker" / "abc"
    mount.mkdir(parents=True)
    (mount / "cpu.cfs_quota_us").write_text("250000\n")
    (mount / "cpu.cfs_period_us").write_text("100000\n")
    proc = tmp_path / "cgroup"
    proc.write_text("12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/\n")
    assert cgroup_quota_cpus(tmp_path / "fs", proc) == 2.5
    (mount / "cpu.cfs_quota_us").write_text("-1\n")  # unlimited
    assert cgroup_quota_cpus(tmp_path / "fs", proc) is None


def test_no_cgroup_file_means_no_quota(tmp_path):
    assert cgroup_quota_cpus(tmp_path, tmp_path / "absent") is None


def test_affinity():
    assert affinity_cpus(lambda pid: {0, 3, 5}) == {0, 3, 5}
    assert len(affinity_cpus()) >= 1


STAT = """cpu  900 0 100 5000 10 0 5 40 0 0
cpu0 300 0 50 2500 5 0 2 20 0 0
cpu1 600 0 50 2500 5 0 3 20 0 0
intr 12345
ctxt 999
"""


def test_proc_stat_counts_the_cpus_we_may_use_and_steal():
    # busy = user + nice + system + irq + softirq + steal; total adds idle and iowait
    assert parse_proc_stat(STAT, {0}) == (300 + 50 + 2 + 20, 300 + 50 + 2500 + 5 + 2 + 20)
    assert parse_proc_stat(STAT, {0, 1}) == (372 + 673, 2877 + 3178)
    assert parse_proc_stat(STAT, {7}) == (0, 0)


def test_busy_elsewhere_subtracts_our_own_time():
    before = CpuSample(wall_s=10.0, busy_s=100.0, own_s=5.0)
    # 2 s: 4 CPU-seconds busy on our CPUs, 2.5 of them ours -> others held 0.75 CPUs
    assert busy_elsewhere(before, CpuSample(12.0, 104.0, 7.5)) == pytest.approx(0.75)
    assert busy_elsewhere(before, CpuSample(12.0, 101.0, 7.0)) == 0.0  # never negative
    assert busy_elsewhere(before, before) == 0.0


@pytest.mark.parametrize(
    ("cpus", "reserved", "elsewhere", "threads"),
    [
        (2, 0.1, 0.0, 2),  # quiet 2-core machine: both cores
        (2, 0.1, 1.0, 1),  # one core held by a neighbour: one thread, no barrier waits
        (2, 0.1, 0.6, 1),  # the second core is less than half free
        (2, 0.1, 0.3, 2),
        (2, 0.3, 7.0, 1),  # at least one
        (16, 0.3, 3.0, 13),
        (1.5, 0.1, 0.0, 1),  # a quota of 1.5 CPUs
        (2.5, 0.1, 0.0, 2),
    ],
)
def test_choose_threads(cpus, reserved, elsewhere, threads):
    assert choose_threads(cpus, reserved, elsewhere) == threads


def test_plan_takes_the_smaller_of_affinity_and_quota():
    assert plan({0, 1, 2, 3}, 2.0, 0.1, 0.0, None).threads == 2
    assert plan({0, 1}, None, 0.1, 0.0, None).threads == 2
    assert plan({0, 1}, None, 0.1, 1.0, None).threads == 1
    budget = plan({0, 1, 2, 3}, None, 0.3, None, None)  # not measurable: no neighbours assumed
    assert budget.threads == 4 and "auto" in budget.summary()


def test_an_explicit_count_always_wins():
    """The setting (its flag, ``POOLQ_THREADS`` or the config: ``tests/test_settings.py``), then
    ``OMP_NUM_THREADS``."""
    env = {"OMP_NUM_THREADS": "2"}
    assert explicit_threads(5, env) == (5, "threads")
    assert explicit_threads(None, env) == (2, "OMP_NUM_THREADS")
    assert explicit_threads(None, {"OMP_NUM_THREADS": "2,1"}) == (2, "OMP_NUM_THREADS")
    assert explicit_threads(None, {"OMP_NUM_THREADS": ""}) is None
    assert explicit_threads(None, {}) is None
    budget = plan({0, 1}, None, 0.1, 1.0, explicit_threads(3, env))
    assert (budget.threads, budget.source) == (3, "threads")
    assert budget.summary() == "3 intra-op threads (threads)"


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5", "auto"])
def test_a_bad_count_is_one_line_naming_it(bad):
    with pytest.raises(
        ValueError, match=rf"^OMP_NUM_THREADS: expected a positive integer, got '{bad}'$"
    ):
        explicit_threads(None, {"OMP_NUM_THREADS": bad})
    from poolq.worker.config.loader import load_values

    with pytest.raises(ValueError, match=r"^POOLQ_THREADS: expected an integer"):
        load_values(("threads",), {}, None, {"POOLQ_THREADS": bad})


class _Clock:
    """Samples on demand: each window, others hold ``held`` CPUs and we use ``ours``."""

    def __init__(self) -> None:
        self.t, self.busy, self.own = 0.0, 0.0, 0.0

    def window(self, held: float, ours: float, seconds: float = 1.5) -> None:
        self.t += seconds
        self.busy += (held + ours) * seconds
        self.own += ours * seconds

    def sample(self) -> CpuSample:
        return CpuSample(self.t, self.busy, self.own)


def test_governor_follows_a_neighbour_and_does_not_flap(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr("poolq.worker.engine.cpu.cpu_threads.time.monotonic", lambda: clock.t)
    gov = ThreadGovernor(plan({0, 1}, None, 0.1, 0.0, None), clock.sample, interval_s=1.0)
    assert gov.tick() == 2
    clock.window(held=0.0, ours=1.9)
    assert gov.tick() == 2
    clock.window(held=0.67, ours=1.33)  # a neighbour arrives: our 2 threads get 4/3 cores
    assert gov.tick() == 2  # one window is not enough
    clock.window(held=0.67, ours=1.33)
    assert gov.tick() == 1
    clock.window(held=1.0, ours=1.0)
    assert gov.tick() == 1 and gov.elsewhere == pytest.approx(1.0)
    clock.window(held=0.0, ours=1.0)  # it left
    clock.t += 0.5
    assert gov.tick() == 1
    clock.window(held=0.0, ours=1.0)  # a quiet window after a busy one: no change yet
    clock.window(held=1.0, ours=1.0)
    assert gov.tick() == 1
    clock.window(held=0.0, ours=1.0)
    assert gov.tick() == 1
    clock.window(held=0.0, ours=1.0)
    assert gov.tick() == 2


def test_governor_waits_for_the_interval(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr("poolq.worker.engine.cpu.cpu_threads.time.monotonic", lambda: clock.t)
    calls = []

    def sample() -> CpuSample:
        calls.append(clock.t)
        return clock.sample()

    gov = ThreadGovernor(plan({0, 1}, None, 0.1, 0.0, None), sample, interval_s=1.0)
    clock.t += 0.5
    gov.tick()
    gov.tick()
    assert len(calls) == 1  # the first sample only: no /proc read inside the interval


def test_a_short_openmp_spin_unless_the_user_chose_one():
    assert openmp_wait_env({}) == {"GOMP_SPINCOUNT": SPIN_COUNT}
    assert openmp_wait_env({"OMP_WAIT_POLICY": "ACTIVE"}) == {}
    assert openmp_wait_env({"GOMP_SPINCOUNT": "300000"}) == {}


def test_the_command_line_sets_the_spin_before_torch_loads(monkeypatch):
    import poolq.worker.cli as cli

    for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY"):
        monkeypatch.setenv(name, "")  # recorded, so that the teardown restores the original
        monkeypatch.delenv(name)
    monkeypatch.setattr("sys.argv", ["poolq", "--version"])
    with pytest.raises(SystemExit):
        cli.main()
    assert os.environ["GOMP_SPINCOUNT"] == SPIN_COUNT
