"""OpenVINO's CPU settings, decided once when the model is compiled.

The threads are the worker's CPU budget: the intra-op count that ``cpu_budget.py`` chose for
this process (less the CPUs held for the tokenizer, the event loop and the store process). How
they run is OpenVINO's throughput recommendation for that many threads (``PERFORMANCE_HINT`` =
``THROUGHPUT``): on 2 threads, 2 streams of 1 thread. The encoder keeps that many requests in
flight (``OPTIMAL_NUMBER_OF_INFER_REQUESTS``) and spreads each forward's bucket calls over them
(``encoder.py``). ``INFERENCE_PRECISION_HINT`` is f32: on CPUs with bf16 the plugin would
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
        "PERFORMANCE_HINT": "THROUGHPUT",
        "INFERENCE_NUM_THREADS": threads or budget_threads(),
        "INFERENCE_PRECISION_HINT": "f32",
    }
