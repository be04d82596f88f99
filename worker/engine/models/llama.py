"""Decoder embedders: Llama, Mistral, Qwen2, Qwen3 (Qwen3-Embedding, E5-Mistral, gte-Qwen2, ...).
Pre-RMSNorm blocks with RoPE, grouped-query attention, SwiGLU; Qwen3 adds RMSNorm on each query
and key head; Qwen2 has q/k/v biases; Mistral may attend within a sliding window. Causal: a
sequence can be prefilled in chunks (``causal_attention.KVCache``); LAST pooling by default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from poolq.worker.engine.models.registry import Architecture, Config, max_positions

MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")
_DEFAULTS: dict[str, Any] = {
    "hidden_act": "silu",
    "rms_norm_eps": 1e-6,
    "max_position_embeddings": 32768,
    "attention_bias": False,
    "mlp_bias": False,
}


def rope_theta(config: Config) -> float:
    """transformers 4 writes ``rope_theta``; 5 writes ``rope_parameters: {rope_theta, rope_type}``."""
    params = config.get("rope_parameters") or config.get("rope_scaling") or {}
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type != "default":
        raise ValueError(
            f"model_type {config.get('model_type')!r}: RoPE scaling {rope_type!r} is not supported "
            f"natively; expected rope_type 'default'"
        )
    return float(config.get("rope_theta") or params.get("rope_theta") or 10000.0)


@dataclass(frozen=True)
class DecoderSpec:
    model_type: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    rms_norm_eps: float
    rope_theta: float
    max_positions: int
    hidden_act: str
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    qk_norm: bool  # Qwen3: RMSNorm over each query / key head before RoPE
    sliding_window: int | None

    @classmethod
    def from_dict(cls, config: Config) -> DecoderSpec:
        from poolq.worker.engine.models.hidden_act import is_known

        c = {**_DEFAULTS, **config}
        model_type = str(c.get("model_type"))
        if model_type not in MODEL_TYPES:
            raise ValueError(f"expected model_type in {MODEL_TYPES}, got {model_type!r}")
        if not is_known(c["hidden_act"]):
            raise ValueError(f"unsupported hidden_act {c['hidden_act']!r}")
        heads = int(c["num_attention_heads"])
        hidden = int(c["hidden_size"])
        kv = int(c.get("num_key_value_heads") or heads)
        if heads % kv:
            raise ValueError(f"num_attention_heads {heads} is not a multiple of kv heads {kv}")
        attn_bias = bool(c.get("attention_bias"))
        window = None
        if model_type == "mistral" or (
            model_type in ("qwen2", "qwen3") and c.get("use_sliding_window")
        ):
            window = c.get("sliding_window")
        if model_type in ("qwen2", "qwen3") and window is not None:
            raise ValueError(
                f"{model_type} with use_sliding_window is not supported natively "
                "(its window applies to some layers only)"
            )
        return cls(
            model_type=model_type,
            vocab_size=int(c["vocab_size"]),
            hidden_size=hidden,
            num_layers=int(c["num_hidden_layers"]),
            num_heads=heads,
            num_kv_heads=kv,
            head_dim=int(c.get("head_dim") or hidden // heads),
            intermediate_size=int(c["intermediate_size"]),
            rms_norm_eps=float(c["rms_norm_eps"]),
            rope_theta=rope_theta(c),
            max_positions=int(c["max_position_embeddings"]),
            hidden_act=str(c["hidden_act"]),
            qkv_bias=model_type == "qwen2" or attn_bias,
            o_bias=model_type in ("llama", "qwen3") and attn_bias,
            mlp_bias=model_type == "llama" and bool(c.get("mlp_bias")),
            qk_norm=model_type == "qwen3",
            sliding_window=int(window) if window else None,
        )


def _build(config: Config, state: dict[str, Tensor]) -> nn.Module:
    from poolq.worker.engine.models.packed_decoder import PackedDecoder

    return PackedDecoder.from_state_dict(DecoderSpec.from_dict(config), state)


LLAMA = Architecture(
    family="llama",
    model_types=MODEL_TYPES,
    attention="causal",
    default_pooling="LAST",
    kinds=frozenset({"decoder", "lm_reranker"}),
    build_encoder=_build,
    positions=max_positions,
    config_defaults=dict.fromkeys(MODEL_TYPES, _DEFAULTS),
)
