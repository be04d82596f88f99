"""fp32 linear layers on oneDNN with a prepacked weight and a fused epilogue (CPU).

``torch.ops.mkldnn._linear_pointwise`` multiplies by a weight reordered once into oneDNN's
blocked layout (``Tensor.to_mkldnn()``), adds the bias inside the GEMM's epilogue instead of
first broadcasting it into the output (the ``copy_`` that ``addmm`` does), and can apply GELU /
ReLU there too, or add the residual (``plus``). On MiniLM's shapes this ran faster than MKL's
``addmm`` + separate GELU / add (``benchmarks/ab_encoder.py``); outputs differ from it by
fp32 rounding only (the fidelity tests hold to 1e-4).

Only for fp32 on the CPU: under bf16 autocast the op would silently stay fp32, and int8 replaces
the linears (``int8.py``) before this would.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from poolq.worker.engine.hidden_act import GELUTanh

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
