"""ModernBERT (gte-modernbert, GTE-ModernColBERT and other PyLate models): a pre-LayerNorm
bidirectional encoder without biases, RoPE with two bases (global layers every
``global_attn_every_n_layers``, a local sliding window of ``local_attention`` tokens elsewhere),
GeGLU MLP. Run by ``models/packed_modernbert.py``; ``*ForSequenceClassification`` checkpoints
(cross-encoders such as gte-reranker-modernbert) add their prediction head and classifier."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from poolq.worker.engine.models.registry import Architecture, Config, State, max_positions

_DEFAULTS: dict[str, Any] = {
    "vocab_size": 50368,
    "hidden_size": 768,
    "intermediate_size": 1152,
    "num_hidden_layers": 22,
    "num_attention_heads": 12,
    "hidden_activation": "gelu",
    "max_position_embeddings": 8192,
    "norm_eps": 1e-5,
    "norm_bias": False,
    "attention_bias": False,
    "mlp_bias": False,
    "global_attn_every_n_layers": 3,
    "local_attention": 128,
    "global_rope_theta": 160000.0,
    "local_rope_theta": 10000.0,
}


@dataclass(frozen=True)
class ModernBertSpec:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    hidden_act: str
    max_positions: int
    norm_eps: float
    norm_bias: bool
    attention_bias: bool
    mlp_bias: bool
    global_layers: tuple[bool, ...]  # per layer: full attention (else the local window)
    half_window: int  # a local layer's token sees tokens within this distance
    global_theta: float
    local_theta: float

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @classmethod
    def from_dict(cls, config: Config) -> ModernBertSpec:
        from poolq.worker.engine.models.hidden_act import is_known

        c = {**_DEFAULTS, **config}
        layers = int(c["num_hidden_layers"])
        types = c.get("layer_types")
        if types:
            global_layers = tuple(t == "full_attention" for t in types)
        else:
            every = int(c["global_attn_every_n_layers"])
            global_layers = tuple(i % every == 0 for i in range(layers))
        rope = c.get("rope_parameters") or {}
        theta = {}  # transformers 5 writes rope_parameters per layer type, 4 the two keys
        for kind, key in (("full_attention", "global"), ("sliding_attention", "local")):
            params = rope.get(kind) or {}
            rope_type = params.get("rope_type", "default")
            if rope_type != "default":
                raise ValueError(f"modernbert: RoPE type {rope_type!r} is not supported natively")
            theta[key] = float(params.get("rope_theta") or c[f"{key}_rope_theta"])
        if not is_known(c["hidden_activation"]):
            raise ValueError(
                f"modernbert: unsupported hidden_activation {c['hidden_activation']!r}"
            )
        hidden, heads = int(c["hidden_size"]), int(c["num_attention_heads"])
        if hidden % heads:
            raise ValueError(f"modernbert: hidden_size {hidden} is not a multiple of heads {heads}")
        return cls(
            vocab_size=int(c["vocab_size"]),
            hidden_size=hidden,
            intermediate_size=int(c["intermediate_size"]),
            num_layers=layers,
            num_heads=heads,
            hidden_act=str(c["hidden_activation"]),
            max_positions=int(c["max_position_embeddings"]),
            norm_eps=float(c["norm_eps"]),
            norm_bias=bool(c["norm_bias"]),
            attention_bias=bool(c["attention_bias"]),
            mlp_bias=bool(c["mlp_bias"]),
            global_layers=global_layers,
            half_window=int(c["local_attention"]) // 2,
            global_theta=theta["global"],
            local_theta=theta["local"],
        )


def _build(config: Config, state: dict[str, Tensor]) -> nn.Module:
    from poolq.worker.engine.models.packed_modernbert import PackedModernBert

    return PackedModernBert.from_state_dict(ModernBertSpec.from_dict(config), state)


def _classifier(config: Config, state: State) -> nn.Module:
    """ModernBertForSequenceClassification: ``classifier(norm(act(dense(pooled))))`` (the
    pooled row is the CLS row or the mean, ``classifier_pooling``)."""
    from poolq.worker.engine.checkpoints.checkpoint_heads import linear_from
    from poolq.worker.engine.models.hidden_act import hidden_activation

    c = {**_DEFAULTS, **config}
    dense = linear_from(state["head.dense.weight"], state.get("head.dense.bias"))
    norm = nn.LayerNorm(dense.out_features, eps=float(c["norm_eps"]), bias=bool(c["norm_bias"]))
    with torch.no_grad():
        norm.weight.copy_(state["head.norm.weight"])
        if norm.bias is not None:
            norm.bias.copy_(state["head.norm.bias"])
    act = hidden_activation(str(c.get("classifier_activation") or c["hidden_activation"]))
    out = linear_from(state["classifier.weight"], state.get("classifier.bias"))
    return nn.Sequential(dense, act, norm, out)


MODERNBERT = Architecture(
    family="modernbert",
    model_types=("modernbert",),
    attention="local_global",
    default_pooling="CLS",
    kinds=frozenset({"encoder", "colbert", "classifier"}),  # colbert: PyLate (GTE-ModernColBERT)
    build_encoder=_build,
    positions=max_positions,
    classifier=_classifier,
    config_defaults={"modernbert": _DEFAULTS},
)
