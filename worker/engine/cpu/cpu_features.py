"""What the CPU computes natively, from its feature flags (Linux ``/proc/cpuinfo``).

Read once per process; tests simulate another CPU by patching :func:`cpu_flags`. Elsewhere (no
``/proc/cpuinfo``) the flag set is empty: no native bf16 is assumed.
"""

from __future__ import annotations

import functools
from pathlib import Path

# Flags under which oneDNN runs bf16 matmuls natively (AVX512-BF16, AMX tiles); without them
# bf16 is converted to fp32 for every multiply, slower than fp32 itself.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
VNNI_FLAGS = ("avx512_vnni", "avx_vnni")


@functools.cache
def cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def native_bf16(flags: frozenset[str] | None = None) -> bool:
    flags = cpu_flags() if flags is None else flags
    return any(f in flags for f in NATIVE_BF16_FLAGS)


def has_vnni() -> bool:
    return any(f in cpu_flags() for f in VNNI_FLAGS)
