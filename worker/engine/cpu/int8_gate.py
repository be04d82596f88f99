"""The int8 quality gate: quantize a loaded fp32 model, and refuse it if int8 strays too far.

``quantize_with_gate(model)``, called by the loader for ``dtype="int8"``:

1. encodes the built-in calibration sample (``calibration_texts.py``) in fp32, through the
   same runner and batches as the engine, recording the input ranges of every linear layer;
2. replaces the encoder's linear layers (and the SPLADE MLM head's: the 30522-wide vocabulary
   projection is SPLADE's largest GEMM) by smoothed int8 ones (``int8.py``); attention,
   LayerNorm, embeddings, pooling and the other heads stay fp32;
3. encodes the sample again in int8 and compares (``int8_quality.py``), logs the figures, and
   raises :class:`Int8QualityError`, figures and floors in the message, if one misses its floor.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

from poolq.worker.engine.batching.lanes import Lane
from poolq.worker.engine.batching.requests import EncodeRequest, Unanswered
from poolq.worker.engine.batching.scheduler import Scheduler
from poolq.worker.engine.checkpoints.loader import PoolingModel
from poolq.worker.engine.cpu.calibration_texts import CALIBRATION_TEXTS
from poolq.worker.engine.cpu.int8 import input_absmax, quantize_linears
from poolq.worker.engine.cpu.int8_quality import GATED_TASKS, QualityMeter, QualityReport
from poolq.worker.engine.engine import MAX_BATCH_REQUESTS, default_batch_tokens
from poolq.worker.engine.engine_inputs import checked_form, tokenize
from poolq.worker.engine.execution.runner import ModelRunner
from poolq.worker.pooling import PoolingParams, SpladePooler
from poolq.worker.pooling.outputs import PoolerOutput
from poolq.worker.pooling.tasks import PoolingTask

log = logging.getLogger("poolq.int8")


class Int8QualityError(ValueError):
    """int8 outputs fell below a floor: the model is not served in int8."""


def gated_tasks(model: PoolingModel) -> list[PoolingTask]:
    tasks = [t for t in model.description.supported_tasks if t in GATED_TASKS]
    if not tasks:
        raise ValueError(
            f"dtype 'int8': model {model.description.model_id!r} serves "
            f"{list(model.description.supported_tasks)}; the int8 quality gate covers "
            f"{list(GATED_TASKS)}: use float32"
        )
    return tasks


def encode_texts(
    model: PoolingModel,
    texts: Sequence[str],
    tasks: Sequence[PoolingTask],
    max_batch_tokens: int | None = None,
) -> list[dict[PoolingTask, PoolerOutput]]:
    """Synchronous encode through the model's runner, batched as the engine batches (arrival
    order, at most ``max_batch_tokens`` tokens each), documents in their input form."""
    budget = max_batch_tokens or default_batch_tokens(model.device)
    form = checked_form(model.description, "document")
    formed = tokenize(model.tokenizer, list(texts), form, None, None)
    params = tuple(PoolingParams(task=t) for t in tasks)
    # batches cut by the engine's own scheduler, as the engine cuts them (one group, one lane:
    # arrival order within the token budget); the runner's outputs are read here directly
    scheduler = Scheduler(budget, MAX_BATCH_REQUESTS)
    unanswered = Unanswered()
    scheduler.add(
        [
            EncodeRequest(
                f"calibration #{i}",
                f.ids,
                f.truncated,
                params,
                Lane.BULK,
                unanswered,
                "int8-gate",
                key_mask_cpu=f.key_mask_cpu,
                keep_rows_cpu=f.keep_rows_cpu,
            )
            for i, f in enumerate(formed)
        ]
    )
    runner = ModelRunner(model)
    out: list[dict[PoolingTask, PoolerOutput]] = []
    while (batch := scheduler.next_batch(0)) is not None:
        out.extend(r for r in runner.run(batch) if r is not None)  # never chunked here
    return out


def quantize_with_gate(model: PoolingModel) -> QualityReport:
    """Quantize ``model`` (fp32, CPU) in place to int8 and gate it; returns the report or raises
    :class:`Int8QualityError` (the model is then left half-converted: do not use it)."""
    if model.device.type != "cpu":
        raise ValueError(f"dtype 'int8' runs on the CPU only, got device {model.device}")
    tasks = gated_tasks(model)
    sparse = model.pooler.poolers_by_task.get("sparse")
    mlm = sparse.mlm_head if isinstance(sparse, SpladePooler) else None
    with contextlib.ExitStack() as stack:
        enc_absmax = stack.enter_context(input_absmax(model.encoder))
        mlm_absmax = stack.enter_context(input_absmax(mlm)) if mlm is not None else {}
        ref = encode_texts(model, CALIBRATION_TEXTS, tasks)  # fp32
    quantize_linears(model.encoder, enc_absmax)
    if mlm is not None:
        quantize_linears(mlm, mlm_absmax)
    return judged(model, ref, encode_texts(model, CALIBRATION_TEXTS, tasks))  # int8


def judged(
    model: PoolingModel,
    ref: Sequence[dict[PoolingTask, PoolerOutput]],
    got: Sequence[dict[PoolingTask, PoolerOutput]],
    how: str = "",
) -> QualityReport:
    """The gate's report on int8 outputs ``got`` against fp32 ``ref`` (logged), or
    :class:`Int8QualityError` where a figure misses its floor. ``how``: the backend and mode
    (OpenVINO), named in the log line and the error."""
    meter = QualityMeter(model.config.int8_floors, model.description.vocab_size)
    for r, g in zip(ref, got, strict=True):
        meter.add(r, g)  # type: ignore[arg-type]
    report = meter.report()
    name = model.description.model_id
    log.info("model %s%s: %s", name, how, report.summary())
    if not report.passed:
        missed = "; ".join(f"{c.task} {c}" for c in report.failures())
        raise Int8QualityError(
            f"model {name!r}: dtype 'int8'{how} refused by the quality gate: {missed} "
            f"({report.summary()}). Serve it in float32, or set lower floors in the model's "
            f"int8_floors if these figures are acceptable"
        )
    return report
