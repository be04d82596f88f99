"""``peer_run.py`` with OpenVINO's inference precision pinned to f32.

OpenVINO's CPU plugin runs an fp32 model in bf16 by default where the CPU has native bf16
(AMX or avx512_bf16: ``INFERENCE_PRECISION_HINT`` reads ``bf16`` there): on such a CPU the
plain ``ov`` peer of an fp32 model is a bf16 peer. This one is the fp32 peer (what poolq's
fp32 backend runs: it must match torch to cosine 0.99999). Same arguments as ``peer_run.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openvino as ov

from benchmarks.peer_run import main

_compile = ov.Core.compile_model


def _compile_f32(self: ov.Core, model: Any, device: str = "CPU", config: Any = None) -> Any:
    return _compile(self, model, device, {**(config or {}), "INFERENCE_PRECISION_HINT": "f32"})


ov.Core.compile_model = _compile_f32  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(main())
