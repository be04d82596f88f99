"""A measured variant, not in poolq's hot path: fp32 linear layers on oneDNN with a prepacked
weight and a fused epilogue (CPU). Measured 0.98-0.99x of MKL ``addmm`` on MiniLM on an idle
2-core AVX-512 Xeon (1.03x under other users' load), so poolq does not use it;
``benchmarks/ab_encoder.py`` ("fused") and ``profile_encoder.py`` apply it with
:func:`fuse_onednn` to measure it again.

``torch.ops.mkldnn._linear_pointwise`` multiplies by a weight reordered once into oneDNN's
blocked layout (``Tensor.to_mkldnn()``), adds the bias inside the GEMM's epilogue instead of
first broadcasting it into the output (the ``copy_`` that ``addmm`` does), and can apply GELU /
ReLU there too, or add the residual (``plus``); outputs differ from ``addmm`` by fp32 rounding
only.

Only for fp32 on the CPU: under bf16 autocast the op would silently stay fp32, and int8 replaces
the linears (``int8.py``) before this would.
"""

from __future__ import annotations

import types

import torch
from torch import Tensor, nn

from poolq.worker.engine.models.hidden_act import GELUTanh

# activation module type -> (oneDNN post-op, algorithm)
_POST_OPS: dict[type[nn.Module], tuple[str, str]] = {
    nn.GELU: ("gelu", "none"),
    GELUTanh: ("gelu", "tanh"),
    nn.ReLU: ("relu", ""),
}


def available() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def post_op_for(act: nn.Module) -> tuple[str, str] | None:
    """The epilogue that computes ``act`` exactly as torch does, or None."""
    if isinstance(act, nn.GELU) and act.approximate != "none":
        return ("gelu", "tanh") if act.approximate == "tanh" else None
    return _POST_OPS.get(type(act))


class OneDNNLinear(nn.Module):
    """``post(x W^T + b)``; ``x [..., in]`` fp32 -> ``[..., out]`` fp32."""

    def __init__(self, linear: nn.Linear, post: tuple[str, str] | None = None) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight_mkldnn = linear.weight.detach().float().cpu().to_mkldnn()  # [out, in] blocked
        self.bias = linear.bias.detach().float().cpu().clone() if linear.bias is not None else None
        self.post, self.algorithm = post or ("none", "")

    def forward(self, x: Tensor) -> Tensor:
        return torch.ops.mkldnn._linear_pointwise(
            x, self.weight_mkldnn, self.bias, self.post, [], self.algorithm
        )

    def plus(self, x: Tensor, residual: Tensor) -> Tensor:
        """``x W^T + b + residual`` in one call (no post-op)."""
        return torch.ops.mkldnn._linear_pointwise.binary(
            x, residual, self.weight_mkldnn, self.bias, "add"
        )

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, post={self.post}"


def _fused_layer_forward(
    layer: nn.Module, x: Tensor, plan: object, cu_seqlens: Tensor | None
) -> Tensor:
    """``packed_encoder._Layer.forward`` with bias (+ GELU) in the GEMM epilogues and the
    residual adds inside the GEMM calls."""
    from poolq.worker.engine.models import packed_encoder

    attn = packed_encoder.packed_attention(
        layer.qkv(x), plan, layer.num_heads, cu_seqlens, packed_encoder._flash_varlen
    )
    x = layer.attn_norm(layer.attn_out.plus(attn, x))
    return layer.ffn_norm(layer.ffn_out.plus(layer.act(layer.ffn_in(x)), x))


def fuse_layer(layer: nn.Module) -> None:
    post = post_op_for(layer.act)
    for name in ("qkv", "attn_out", "ffn_out"):
        setattr(layer, name, OneDNNLinear(getattr(layer, name)))
    layer.ffn_in = OneDNNLinear(layer.ffn_in, post)
    if post is not None:
        layer.act = nn.Identity()
    layer.forward = types.MethodType(_fused_layer_forward, layer)


def fuse_mlm_head(head: nn.Module) -> None:
    post = post_op_for(head.act)
    head.dense = OneDNNLinear(head.dense, post)
    if post is not None:
        head.act = nn.Identity()
    head.decoder = OneDNNLinear(head.decoder)


def fuse_onednn(model: object) -> None:
    """An fp32 CPU ``PoolingModel``: its packed encoder's linears and its SPLADE MLM head on
    oneDNN (what poolq's loader did when ``FUSE_ONEDNN`` was on)."""
    from poolq.worker.engine.checkpoints.checkpoint_heads import MLMHead
    from poolq.worker.engine.models.packed_encoder import PackedEncoder
    from poolq.worker.pooling import SpladePooler

    if not available():
        return
    encoder = model.encoder  # type: ignore[attr-defined]
    if isinstance(encoder, PackedEncoder):
        for layer in encoder.layers:
            fuse_layer(layer)
    sparse = model.pooler.poolers_by_task.get("sparse")  # type: ignore[attr-defined]
    if isinstance(sparse, SpladePooler) and isinstance(sparse.mlm_head, MLMHead):
        fuse_mlm_head(sparse.mlm_head)
