"""int8 for the OpenVINO backend: NNCF post-training quantization, then the int8 quality gate.

Calibration is the gate's built-in sample (``calibration_texts.py``), tokenized as the engine
tokenizes and padded into the same length buckets the encoder runs (``buckets.py``): every
linear layer (the SPLADE vocabulary projection included) gets int8 weights and activations,
with NNCF's transformer preset (SmoothQuant on, fast bias correction); the same sample in the
same order gives the same model. Where that static int8 misses a floor, int8 weights with
dynamic activations are tried (``MODES``); the cache remembers a refused mode. The gate then
encodes the sample with the fp32 compiled model
and with the int8 one, through the runner and the poolers, and refuses int8 exactly as the torch
gate does (``int8_gate.py``: the model's ``int8_floors``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from poolq.worker.engine.cpu.calibration_texts import CALIBRATION_TEXTS
from poolq.worker.engine.openvino.buckets import padded_inputs, plan_calls

if TYPE_CHECKING:
    from poolq.worker.engine.checkpoints.loader import PoolingModel
    from poolq.worker.engine.cpu.int8_report import QualityReport
    from poolq.worker.engine.openvino.encoder import OpenVinoEncoder


def calibration_inputs(
    model: PoolingModel, lengths: tuple[int, ...], budget: int, sparse_head: bool
) -> list[dict[str, np.ndarray]]:
    """The calibration sample as the encoder's padded calls."""
    toks = model.tokenizer.encode_batch(list(CALIBRATION_TEXTS))
    seq_lens = [len(t.ids) for t in toks]
    ids = np.asarray([i for t in toks for i in t.ids], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(seq_lens)[:-1])).astype(np.int64).tolist()
    items = []
    for call in plan_calls(seq_lens, lengths, budget):
        pad_ids, mask, valid = padded_inputs(ids, starts, seq_lens, call)
        item = {"input_ids": pad_ids, "attention_mask": mask}
        if sparse_head:
            item["pool_mask"] = valid.astype(np.int64)
        items.append(item)
    return items


# tried in this order, each behind the gate: static int8 (NNCF PTQ, int8 activations with
# calibrated scales: the fast one on VNNI CPUs), then int8 weights with the activations left to
# the plugin (dynamic quantization where the CPU has it, else fp32): static scales shared by
# every batch lose more on small models than torch's per-batch dynamic scales do
MODES = ("static", "weights")


def quantize(ov_model: Any, samples: Sequence[dict[str, np.ndarray]], mode: str = "static") -> Any:
    """NNCF int8 of an ``openvino.Model`` (deterministic for a given sample)."""
    import nncf

    if mode == "weights":
        return nncf.compress_weights(ov_model, mode=nncf.CompressWeightsMode.INT8_ASYM)
    return nncf.quantize(
        ov_model,
        nncf.Dataset(list(samples)),
        model_type=nncf.ModelType.TRANSFORMER,
        subset_size=len(samples),
    )


def gate(
    model: PoolingModel, encoder: OpenVinoEncoder, fp32: Any, int8: Any, mode: str = "static"
) -> QualityReport:
    """Encode the sample with ``fp32`` then ``int8`` compiled models; the report, or
    :class:`Int8QualityError` (the encoder is then left on fp32)."""
    from poolq.worker.engine.cpu.int8_gate import (
        Int8QualityError,
        encode_texts,
        gated_tasks,
        judged,
    )

    tasks = gated_tasks(model)
    encoder.use(fp32, "float32")
    ref = encode_texts(model, CALIBRATION_TEXTS, tasks)
    encoder.use(int8, "int8")
    got = encode_texts(model, CALIBRATION_TEXTS, tasks)
    try:
        return judged(model, ref, got, f" (openvino, {mode})")
    except Int8QualityError:
        encoder.use(fp32, "float32")
        raise
