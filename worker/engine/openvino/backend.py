"""Which backend runs a loaded model's forwards, and the loader's one call to switch it.

The setting: ``backend`` of the process's options (``engine/process_options.py``, which
``poolq worker`` and ``poolq encode`` set from their settings: ``--backend``, ``POOLQ_BACKEND``,
the config's ``backend``), one of ``torch`` (the default), ``openvino`` or ``auto``:

* ``torch``: nothing changes.
* ``openvino``: the model's family must have a padded form (model registry), the device must be
  the CPU and the precision float32 or int8, and ``openvino`` must be installed
  (``pip install 'poolq[openvino]'``); anything else is an error naming what is missing.
* ``auto``: OpenVINO where all of that holds and its outputs pass the gate (int8: the int8
  quality gate; float32: cosine >= 0.99999 against torch on the built-in sample), else torch.
  One log line says what was chosen and why.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from poolq.worker.engine.process_options import process_options

if TYPE_CHECKING:
    import torch

    from poolq.worker.engine.checkpoints.description import ModelDescription
    from poolq.worker.engine.checkpoints.loader import PoolingModel
    from poolq.worker.engine.openvino.encoder import OpenVinoEncoder
    from poolq.worker.pooling import DispatchPooler

log = logging.getLogger("poolq.openvino")

FP32_MIN_COSINE = 0.99999  # auto, float32: OpenVINO against torch on the built-in sample
CALL_TOKENS = 8192  # most padded tokens in one OpenVINO call without a SPLADE head


def why_not(desc: ModelDescription, device: torch.device, precision: str) -> str | None:
    """Why OpenVINO cannot run this model (None: it can)."""
    from poolq.worker.engine.models import architecture_for

    if device.type != "cpu":
        return f"device {device} (OpenVINO is the CPU backend)"
    if precision not in ("float32", "int8"):
        return f"precision {precision} (OpenVINO runs float32 and int8)"
    arch = architecture_for(desc.model_type)
    if not desc.native_encoder or arch is None:
        return f"model_type {desc.model_type!r} runs on the transformers fallback"
    if arch.padded_form is None:
        return f"family {arch.family!r} has no padded form for OpenVINO yet"
    try:
        import openvino  # noqa: F401
    except ImportError:  # pragma: no cover - the extra is installed in CI
        return "openvino is not installed (pip install 'poolq[openvino]')"
    if precision == "int8" and importlib.util.find_spec("nncf") is None:
        return "nncf is not installed (pip install 'poolq[openvino]')"  # imported to quantize
    return None


def graph_head(pooler: DispatchPooler) -> bool:
    """Whether the SPLADE head (and its max over tokens) goes inside the graph."""
    from poolq.worker.pooling import SpladePooler

    sparse = pooler.poolers_by_task.get("sparse")
    return isinstance(sparse, SpladePooler) and sparse.mode == "max"


def apply_backend(model: PoolingModel) -> bool:
    """Put ``model`` (loaded in fp32 on torch) on the chosen backend. True: OpenVINO runs it
    (int8 already quantized and gated); False: torch does (the loader goes on with it)."""
    setting = process_options().backend
    if setting == "torch":
        return False
    name = model.description.model_id
    why = why_not(model.description, model.device, model.precision)
    if why is not None:
        if setting == "openvino":
            raise ValueError(f"model {name!r}: backend 'openvino' cannot run it: {why}")
        log.info("backend auto: torch for %s: %s", name, why)
        return False
    from poolq.worker.engine.cpu.int8_gate import Int8QualityError

    saved = (model.encoder, dict(model.pooler.poolers_by_task))
    try:
        how = _to_openvino(model, check_fp32=setting == "auto")
    except (Int8QualityError, _Mismatch) as exc:
        if setting == "openvino":
            raise
        model.encoder, model.pooler.poolers_by_task = saved[0], saved[1]
        log.info("backend auto: torch for %s: OpenVINO %s", name, exc)
        return False
    log.info("backend %s: openvino for %s (%s)", setting, name, how)
    return True


class _Mismatch(ValueError):
    """float32 OpenVINO outputs differ from torch's (auto keeps torch)."""


def _to_openvino(model: PoolingModel, check_fp32: bool) -> str:
    import openvino as ov

    from poolq.worker.engine.engine import default_batch_tokens
    from poolq.worker.engine.openvino import cache, direct_plan
    from poolq.worker.engine.openvino.buckets import bucket_lengths
    from poolq.worker.engine.openvino.encoder import OpenVinoEncoder
    from poolq.worker.engine.openvino.splade import GraphSpladePooler
    from poolq.worker.engine.openvino.threads import compile_config
    from poolq.worker.pooling import SpladePooler

    t0 = time.perf_counter()
    sparse = model.pooler.poolers_by_task.get("sparse")
    head = graph_head(model.pooler)
    key, converted = _converted(model, head)
    core = ov.Core()
    config = compile_config()
    # int8 compiles the fp32 model only for the gate's reference pass (not on a cached verdict),
    # and reads it only to quantize
    fp32 = functools.cache(lambda: cache.compile_cached(core, key, config, converted))
    fp32_model = functools.cache(
        lambda: converted if converted is not None else cache.load_cached(key)
    )
    lengths = bucket_lengths(model.description.max_length)
    budget = default_batch_tokens(model.device)  # calibration: the engine's default batches
    # one call's cap: a forward holds the scheduler's batch (2048 tokens by default on CPU);
    # with larger batches (--max-batch-tokens) larger calls run faster, but a SPLADE head's
    # [rows, L, vocabulary] logits live inside the graph: it keeps the default
    calls = budget if head else max(budget, CALL_TOKENS)
    remove = sparse.remove_token_ids if isinstance(sparse, SpladePooler) else ()
    encoder = OpenVinoEncoder(
        fp32() if model.precision == "float32" else None,
        model.description.hidden_size,
        lengths,
        calls,
        sparse_head=head,
        remove_token_ids=remove,
    )
    if check_fp32 and model.precision == "float32":
        _check_fp32(model, encoder)
    torch_encoder = model.encoder
    model.encoder = encoder
    if head:
        assert isinstance(sparse, SpladePooler)
        model.pooler.poolers_by_task["sparse"] = GraphSpladePooler(sparse, encoder)
    how = [
        f"openvino {ov.get_version().split('-')[0]}",
        "converted" if converted is not None else "cached",
        f"{config['INFERENCE_NUM_THREADS']} threads",
        f"{len(lengths)} length buckets",
    ]
    if head:
        how.append("SPLADE max in the graph")
    if model.precision == "int8":
        try:
            how.append(_int8(model, encoder, fp32_model, fp32, lengths, budget, head))
        except Exception:
            model.encoder = torch_encoder
            raise
    del torch_encoder  # the torch weights go with it (the poolers keep their own heads)
    if not head and (plan := direct_plan.plan_for(model)) is not None:
        direct_plan.write(key, plan)  # a later dense encode runs without torch
    how += [f"{encoder.streams} streams", f"ready in {time.perf_counter() - t0:.2f} s"]
    return ", ".join(how)


def _int8(
    model: PoolingModel,
    encoder: OpenVinoEncoder,
    fp32_model: Callable[[], Any],
    fp32: Callable[[], Any],
    lengths: tuple[int, ...],
    budget: int,
    head: bool,
) -> str:
    """Quantize (or read the cache), gate; the first mode that passes runs. Raises the last
    mode's :class:`Int8QualityError` when none does."""
    import openvino as ov

    from poolq.worker.engine.cpu.int8_gate import Int8QualityError
    from poolq.worker.engine.openvino import cache, quantize
    from poolq.worker.engine.openvino.threads import compile_config

    error: Int8QualityError | None = None
    core = ov.Core()
    for mode in quantize.MODES:
        key = cache.cache_key(model.description.path, sparse_head=head, precision=f"int8-{mode}")
        if (before := cache.refused(key, model.config.int8_floors)) is not None:
            error = Int8QualityError(f"{before} (cached verdict)")
            continue
        floors = model.config.int8_floors
        if (report := cache.passed(key, floors)) is not None and cache.has(key):
            # this very model passed this gate under these floors before: no second fp32 run
            encoder.use(cache.compile_cached(core, key, compile_config()), "int8")
            model.int8_report = report
            log.info(
                "model %s (openvino int8, %s): %s (cached verdict)",
                model.description.model_id,
                mode,
                report.summary(),
            )
            return f"int8 {mode}, gate passed (cached verdict)"
        q = cache.load_cached(key)
        if q is None:
            samples = quantize.calibration_inputs(model, lengths, budget, head)
            q = quantize.quantize(fp32_model(), samples, mode)
            cache.store(key, q)
        int8 = cache.compile_cached(core, key, compile_config(), q)
        try:
            model.int8_report = quantize.gate(model, encoder, fp32(), int8, mode)
        except Int8QualityError as exc:
            cache.mark_refused(key, model.config.int8_floors, str(exc))
            error = exc
            continue
        cache.mark_passed(key, floors, model.int8_report)
        return f"int8 {mode}, gate passed"
    assert error is not None
    raise error


def _converted(model: PoolingModel, head: bool) -> tuple[str, Any | None]:
    """The fp32 model's cache key, and the ``openvino.Model`` when it was converted now (None:
    it is in the cache; the model's encoder may then be an unbuilt one, ``cached_start.py``)."""
    from poolq.worker.engine.models import architecture_for
    from poolq.worker.engine.openvino import cache
    from poolq.worker.engine.openvino.graph import GraphForm, convert

    key = cache.cache_key(model.description.path, sparse_head=head, precision="float32")
    if cache.has(key):
        return key, None
    arch = architecture_for(model.description.model_type)
    assert arch is not None and arch.padded_form is not None
    sparse = model.pooler.poolers_by_task.get("sparse")
    mlm = getattr(sparse, "mlm_head", None) if head else None
    converted = convert(GraphForm(arch.padded_form(model.encoder), mlm))
    cache.store(key, converted)
    return key, converted


def _check_fp32(model: PoolingModel, encoder: OpenVinoEncoder) -> None:
    """auto, float32: OpenVINO's embeddings against torch's on the built-in sample."""
    from poolq.worker.engine.cpu.calibration_texts import CALIBRATION_TEXTS
    from poolq.worker.engine.cpu.int8_gate import encode_texts

    tasks = [t for t in model.description.supported_tasks if t in ("embed", "token_embed")]
    if not tasks:
        return
    ref = encode_texts(model, CALIBRATION_TEXTS, tasks)
    torch_encoder, model.encoder = model.encoder, encoder
    try:
        got = encode_texts(model, CALIBRATION_TEXTS, tasks)
    finally:
        model.encoder = torch_encoder
    worst = min(_min_cos(r[t], g[t]) for r, g in zip(ref, got, strict=True) for t in tasks)
    if worst < FP32_MIN_COSINE:
        raise _Mismatch(f"float32 min cosine vs torch {worst:.6f} < {FP32_MIN_COSINE}")


def _min_cos(a: object, b: object) -> float:
    import torch
    import torch.nn.functional as F

    assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
    return float(F.cosine_similarity(a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])).min())
