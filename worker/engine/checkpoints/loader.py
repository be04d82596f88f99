"""Load a pooling model: checkpoint folder or hub id -> description, tokenizer, encoder, pooler.

Precedence for every choice: explicit :class:`ModelConfig` > sentence-transformers metadata
(``modules.json``, Pooling, Dense, Normalize, ``max_seq_length``, prompts) > architecture default
(BERT-likes CLS, causal LAST). What a checkpoint's kind decides (ColBERT, SPLADE, BGE-M3, ...)
is its entry in the checkpoint-kind registry (``kinds/``). ``trust_remote_code`` is never used.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

import torch
from torch import nn

from poolq.worker.engine.checkpoints.checkpoint import load_weights
from poolq.worker.engine.checkpoints.description import ModelConfig, ModelDescription
from poolq.worker.engine.checkpoints.idf import IdfWeights
from poolq.worker.engine.checkpoints.kinds import Checkpoint, CheckpointKind, kind_named, recognize
from poolq.worker.engine.checkpoints.kinds.inputs import PoolerInputs
from poolq.worker.engine.execution.compute_thread import CPU_COMPUTE, yield_to_urgent
from poolq.worker.engine.execution.device import (
    compute_dtype,
    resolve_device,
    resolve_precision,
    warn_emulated_bf16,
)
from poolq.worker.engine.execution.tokenizer import TextTokenizer
from poolq.worker.engine.models import architecture_for
from poolq.worker.engine.models.registry import max_positions
from poolq.worker.engine.process_options import process_options
from poolq.worker.pooling import (
    DispatchPooler,
    SpladePooler,
)
from poolq.worker.pooling.tasks import PoolingTask

if TYPE_CHECKING:
    from poolq.worker.engine.cpu.int8_quality import QualityReport


def _max_length(ck: Checkpoint, cfg: ModelConfig, kind: CheckpointKind) -> int:
    arch = architecture_for(ck.config.get("model_type"))
    # RoPE decoders: positions are the model's limit; RoBERTa's start after the padding index
    positions = arch.positions(ck.config) if arch else max_positions(ck.config)
    # a kind may say max_seq_length is no model limit (PyLate rewrites it per call)
    st_len = ck.st.max_seq_length if ck.st and kind.st_max_length else None
    candidates = [cfg.max_length, st_len]
    tok_cfg = ck.path / "tokenizer_config.json"
    if tok_cfg.is_file():
        mml = json.loads(tok_cfg.read_text()).get("model_max_length")
        candidates.append(int(mml) if isinstance(mml, int | float) and mml < 1_000_000 else None)
    chosen = next((int(c) for c in candidates if c), positions)
    if cfg.max_length and cfg.max_length > positions:
        raise ValueError(f"max_length={cfg.max_length} exceeds the model's {positions} positions")
    return min(chosen, positions)


def describe(
    ck: Checkpoint, cfg: ModelConfig, tok: TextTokenizer | None = None
) -> ModelDescription:
    """``tok``: the model's tokenizer if already loaded (ColBERT forms need token ids). What
    depends on the checkpoint's kind (tasks and sizes, the embed method, which metadata counts,
    query/document forms) is its registry entry's (``worker/engine/checkpoints/kinds/``)."""
    kind = recognize(ck)
    c = ck.config
    model_type = str(c.get("model_type", ""))
    st = ck.st
    pooling = kind.pooling(ck, cfg) if kind.pooling is not None else None
    tasks: dict[PoolingTask, int] = kind.tasks(ck)
    normalize = (
        cfg.normalize
        if cfg.normalize is not None
        else (st.normalize if st is not None and kind.st_normalize else True)
    )
    arch = architecture_for(model_type)
    mdims = cfg.matryoshka_dims or c.get("matryoshka_dimensions")
    is_m = cfg.is_matryoshka if cfg.is_matryoshka is not None else c.get("is_matryoshka")
    max_length = _max_length(ck, cfg, kind)
    forms = pair = None
    if kind.input_forms is not None:
        tok = tok or TextTokenizer.from_folder(ck.path, max_length)
        forms = kind.input_forms(ck, tok, max_length)
    if kind.pair_form is not None:
        tok = tok or TextTokenizer.from_folder(ck.path, max_length)
        pair = kind.pair_form(ck, tok, max_length, cfg)
    return ModelDescription(
        model_id=ck.model_id,
        path=str(ck.path),
        kind=kind.name,
        architecture=str((c.get("architectures") or [model_type])[0]),
        model_type=model_type,
        hidden_size=ck.hidden_size,
        vocab_size=ck.vocab_size,
        max_length=max_length,
        pooling=pooling,
        normalize=bool(normalize),
        supported_tasks=tuple(tasks),
        output_dims=tuple(tasks.items()),
        is_matryoshka=None if is_m is None else bool(is_m),
        matryoshka_dims=tuple(int(d) for d in mdims) if mdims else None,
        prompts=tuple((st.prompts if st else {}).items()),
        default_prompt_name=st.default_prompt_name if st else None,
        # the packed engine runs it, else the padded transformers fallback
        native_encoder=arch is not None and kind.name in arch.kinds,
        input_forms=forms,
        pair_form=pair,
    )


@dataclass
class PoolingModel:
    """Everything needed to turn token ids into pooled outputs for one checkpoint."""

    description: ModelDescription
    config: ModelConfig
    tokenizer: TextTokenizer
    encoder: nn.Module  # (input_ids [T], seq_lens) -> hidden [T, H]
    pooler: DispatchPooler
    device: torch.device
    dtype: torch.dtype  # what activations run in (fp32 for int8)
    precision: str = "float32"  # resolved: float32, bfloat16, float16 or int8
    int8_report: QualityReport | None = None  # the int8 quality gate's figures
    bf16_slowdown: float | None = None  # measured, when bf16 is emulated on this CPU
    # sparse models shipping idf.json: queries are weighted tokens, no forward (idf.py)
    query_idf: IdfWeights | None = None
    # SPLADE heads: mean non-zero terms per text on a fixed sample (sparse_density.py)
    sparse_terms_mean: float | None = None


def load_model(config: ModelConfig | str) -> PoolingModel:
    """Load and prepare a model; a CPU model is built on the process's compute thread
    (``compute_thread.py``): the torch work of loading and of the int8 gate stays on the one
    OpenMP team that the forwards use."""
    cfg = ModelConfig(model=config) if isinstance(config, str) else config
    if resolve_device(cfg.device).type == "cpu":
        return CPU_COMPUTE.run(_load_model, cfg)
    return _load_model(cfg)


def _backend_precision(cfg: ModelConfig, device: torch.device, precision: str) -> str:
    """``auto`` resolves to bf16 on CPUs with native bf16, which the OpenVINO backend does not
    run: with ``backend = "openvino"`` it stays float32 there (an explicit dtype is kept)."""
    if precision != "bfloat16" or cfg.dtype not in (None, "auto") or device.type != "cpu":
        return precision
    if process_options().backend != "openvino":
        return precision
    logging.getLogger(__name__).info(
        "dtype auto: float32 for %s (backend openvino runs float32 or int8, not bfloat16)",
        cfg.model,
    )
    return "float32"


def _load_model(cfg: ModelConfig) -> PoolingModel:
    ck = Checkpoint.open(cfg.model)
    if cfg.classifier_from_token is not None:  # an LLM reranker its files do not name
        config = {**ck.config, "classifier_from_token": list(cfg.classifier_from_token)}
        ck = replace(ck, config=config)
    tok = TextTokenizer.from_folder(ck.path, _max_length(ck, cfg, recognize(ck)))
    desc = describe(ck, cfg, tok)
    device = resolve_device(cfg.device)
    precision = _backend_precision(cfg, device, resolve_precision(cfg.dtype, device))
    dtype = compute_dtype(precision)
    encoder: nn.Module | None = None
    state: dict[str, torch.Tensor] = {}
    arch = architecture_for(desc.model_type)
    if desc.native_encoder and arch is not None:
        from poolq.worker.engine.openvino.cached_start import lazy_start

        # backend openvino: the heads read on demand, the torch encoder built below only when
        # the converted model is not in the disk cache (openvino/cached_start.py)
        lazy = lazy_start(ck.path, desc, device, precision)
        if lazy is not None:
            state = cast(dict[str, torch.Tensor], lazy)  # a Mapping: the poolers only look up
        else:
            state = load_weights(ck.path)
            encoder = arch.build_encoder(arch.with_defaults(ck.config), state)
    else:
        from poolq.worker.engine.execution.fallback import PaddedAutoModelRunner

        pad = ck.config.get("pad_token_id")
        encoder = PaddedAutoModelRunner(ck.path, int(pad) if pad is not None else 0, torch.float32)
        if kind_named(desc.kind).head_weights:  # the kind's heads, from the main weights
            state = load_weights(ck.path)
    # its kind's poolers and heads, from the weights (all heads in fp32)
    inputs = PoolerInputs(ck.st, ck.path, ck.config, desc, cfg, state, tok)
    pooler = kind_named(desc.kind).build_poolers(inputs)
    if encoder is None:
        from poolq.worker.engine.openvino.cached_start import cached_encoder

        assert arch is not None
        encoder = cached_encoder(desc, pooler)
        if encoder is None:  # not converted yet: the torch encoder converts
            encoder = arch.build_encoder(arch.with_defaults(ck.config), load_weights(ck.path))
    # Weights stay FP32; bf16/fp16 runs under autocast (matmuls and attention in low precision,
    # LayerNorm and the residual stream in FP32).
    encoder = encoder.to(device).eval()
    pooler = pooler.to(device).eval()
    sparse = pooler.poolers_by_task.get("sparse")
    if isinstance(sparse, SpladePooler):
        sparse.compute_dtype = dtype
        if device.type == "cpu":
            sparse.between_blocks = yield_to_urgent
    for p in list(encoder.parameters()) + list(pooler.parameters()):
        p.requires_grad_(False)
    model = PoolingModel(desc, cfg, tok, encoder, pooler, device, dtype, precision)
    if "sparse" in desc.supported_tasks:
        model.query_idf = IdfWeights.from_folder(ck.path, tok)
    from poolq.worker.engine.openvino.backend import apply_backend

    # the process's backend (openvino/backend.py): OpenVINO, when it takes the model, quantizes
    # and gates int8 itself
    if not apply_backend(model) and precision == "int8":  # built in fp32 above; gated
        from poolq.worker.engine.cpu.int8_gate import quantize_with_gate

        model.int8_report = quantize_with_gate(model)
    if "sparse" in desc.supported_tasks:  # warns when the head is positive on much of the vocab
        from poolq.worker.engine.checkpoints.sparse_density import check_sparse_density

        model.sparse_terms_mean = check_sparse_density(model)
    inter = int(ck.config.get("intermediate_size") or 4 * desc.hidden_size)
    model.bf16_slowdown = warn_emulated_bf16(precision, device, desc.hidden_size, inter)
    return model
