"""OpenVINO's CPU settings, decided once when the model is compiled.

The engine runs one forward at a time on its compute thread (the scheduler's batch is already
the unit of throughput), so the compiled model gets one stream whose threads are the worker's
CPU budget: the intra-op count that ``cpu_budget.py`` chose for this process (less the CPUs
held for the tokenizer, the event loop and the store process), which the probe applied to torch
before the model loads. More streams would only split those cores between requests the engine
never runs at once. ``INFERENCE_PRECISION_HINT`` is f32: on CPUs with bf16 the plugin would
otherwise run an fp32 model in bf16, and fp32 must match torch.
"""

from __future__ import annotations

from typing import Any


def budget_threads() -> int:
    """The intra-op thread count chosen for this process (``cpu_threads.py`` applied it)."""
    import torch

    return max(1, int(torch.get_num_threads()))


def compile_config(threads: int | None = None) -> dict[str, Any]:
    return {
        "PERFORMANCE_HINT": "LATENCY",
        "NUM_STREAMS": 1,
        "INFERENCE_NUM_THREADS": threads or budget_threads(),
        "INFERENCE_PRECISION_HINT": "f32",
    }
