"""Applies :mod:`cpu_budget`'s choice to torch: once at start-up (:class:`CpuProbe`), then while
the engine runs (:class:`ThreadGovernor`, called before each CPU forward through
:func:`governed_threads`) so a long-lived worker follows neighbours that come and go.

``torch.set_num_threads`` sets the calling thread's OpenMP team size and the default of every
thread that runs its first operator later; the compute thread (``compute_thread.py``) applies
its caller's count before each job, so the governed count is applied again at the start of each
forward, on the thread that runs it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator

from poolq.worker.engine.cpu.cpu_budget import (
    CpuBudget,
    CpuSample,
    StartProbe,
    busy_elsewhere,
    choose_threads,
    explicit_threads,
)

log = logging.getLogger("poolq.engine")


class ThreadGovernor:
    """Re-chooses the thread count from what neighbours took since the last look, at most every
    ``interval_s``; a change needs ``confirm`` windows in a row that agree (no flapping on one
    noisy window). ``sample``: a :class:`CpuSample` now (injected by tests)."""

    def __init__(
        self,
        budget: CpuBudget,
        sample: Callable[[], CpuSample | None],
        interval_s: float = 1.0,
        confirm: int = 2,
    ) -> None:
        self.budget = budget
        self.threads = budget.threads
        self.elsewhere = budget.elsewhere
        self._sample = sample
        self._interval_s = interval_s
        self._confirm = confirm
        self._last = sample()
        self._pending: tuple[int, int] | None = None  # (candidate, windows seen)

    def tick(self) -> int:
        """The thread count to use now (cheap unless a window has passed: one /proc read)."""
        if self._last is None or time.monotonic() - self._last.wall_s < self._interval_s:
            return self.threads
        now = self._sample()
        if now is None:
            return self.threads
        self.elsewhere = busy_elsewhere(self._last, now)
        self._last = now
        want = choose_threads(self.budget.cpus, self.budget.reserved, self.elsewhere)
        if want == self.threads:
            self._pending = None
            return self.threads
        seen = self._pending[1] + 1 if self._pending and self._pending[0] == want else 1
        self._pending = (want, seen)
        if seen >= self._confirm:
            log.info(
                "cpu: %d -> %d intra-op threads (%.2f CPUs held by other processes)",
                self.threads,
                want,
                self.elsewhere,
            )
            self.threads, self._pending = want, None
        return self.threads


_GOVERNOR: ThreadGovernor | None = None


class CpuProbe(StartProbe):
    """:class:`StartProbe` whose choice is applied to torch."""

    @contextlib.contextmanager
    def applied(
        self, flag: int | None, reserved: float, *, govern: bool = True
    ) -> Iterator[CpuBudget]:
        """Choose, apply to torch (this thread and every thread that starts later) and, when
        automatic and ``govern``, keep re-choosing before each CPU forward
        (:func:`governed_threads`). On exit the governor stops and the caller's count returns."""
        global _GOVERNOR
        explicit = explicit_threads(flag)
        budget = self.choose(explicit, reserved)
        elsewhere = budget.elsewhere
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(budget.threads)
        if govern and explicit is None and elsewhere is not None:
            cpus = self.cpus
            _GOVERNOR = ThreadGovernor(budget, lambda: CpuSample.now(cpus))
        log.info("cpu: %s", budget.summary())
        try:
            yield budget
        finally:
            _GOVERNOR = None
            torch.set_num_threads(before)


def governed_threads() -> None:
    """Called before a CPU forward, on the thread that runs it: apply the governor's current
    choice (no-op without one: explicit threads, or a process that never probed)."""
    governor = _GOVERNOR
    if governor is None:
        return
    import torch

    threads = governor.tick()
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
