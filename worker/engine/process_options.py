"""What every model load in this process follows: the backend of the CPU forwards, whether
``dtype = "auto"`` may pick bfloat16, and the cache folder of converted models and checkpoint
fingerprints. Set once by the command that starts the process, from its settings
(``worker/config/``: ``backend``, ``auto_bf16``, ``cache_dir``); the engine never reads the
environment for them. A library caller that sets nothing gets the defaults."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

BACKENDS = ("torch", "openvino", "auto")


@dataclass(frozen=True)
class ProcessOptions:
    backend: str = "torch"  # torch, openvino or auto (engine/openvino/backend.py)
    auto_bf16: bool = True  # False: dtype auto stays float32 even where bf16 is native
    cache_dir: str | None = None  # None: $XDG_CACHE_HOME/poolq, else ~/.cache/poolq

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(
                f"backend: expected one of {', '.join(BACKENDS)}, got {self.backend!r}"
            )


_current = ProcessOptions()


def process_options() -> ProcessOptions:
    return _current


def set_process_options(**changes: Any) -> ProcessOptions:
    """Change the given options (None values ignored); the options before the change."""
    global _current
    before = _current
    _current = replace(_current, **{k: v for k, v in changes.items() if v is not None})
    return before


@contextlib.contextmanager
def process_options_set(**changes: Any) -> Iterator[ProcessOptions]:
    """The options changed while the block runs (tests, benchmarks)."""
    global _current
    before = set_process_options(**changes)
    try:
        yield _current
    finally:
        _current = before
