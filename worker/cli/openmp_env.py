"""OpenMP settings that must be in the environment before torch loads libgomp (it reads them
once). Here, not in ``worker/engine/``, so that client commands import nothing of the engine."""

from __future__ import annotations

from collections.abc import Mapping

# libgomp spins this many times (about 0.1 ms) at a barrier before it sleeps; its default when
# OMP_WAIT_POLICY is unset is 300,000 (about 3 ms, more on slow-pause CPUs): a thread whose
# partner lost its core to a neighbour then burns its own core for milliseconds per operator.
SPIN_COUNT = "10000"


def openmp_wait_env(environ: Mapping[str, str]) -> dict[str, str]:
    """Variables to set before torch loads libgomp: a short spin, unless the user chose a wait
    policy or spin count."""
    if "OMP_WAIT_POLICY" in environ or "GOMP_SPINCOUNT" in environ:
        return {}
    return {"GOMP_SPINCOUNT": SPIN_COUNT}
