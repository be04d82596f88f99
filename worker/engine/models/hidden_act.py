"""The activation a checkpoint's ``hidden_act`` names, as transformers' ``ACT2FN`` computes it,
without importing transformers (about 1.7 s of start-up) for the common names; any other name
is looked up in ``ACT2FN`` itself (imported then)."""

from __future__ import annotations

import functools

import torch.nn.functional as F
from torch import Tensor, nn


class GELUTanh(nn.Module):
    """transformers' ``gelu_pytorch_tanh``: ``F.gelu(x, approximate="tanh")``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, approximate="tanh")


# name -> module computing exactly what ACT2FN[name] computes (the same torch kernel)
_NATIVE: dict[str, type[nn.Module]] = {
    "gelu": nn.GELU,  # ACT2FN["gelu"] is GELUActivation: F.gelu, the exact erf form
    "gelu_pytorch_tanh": GELUTanh,
    "relu": nn.ReLU,
    "silu": nn.SiLU,
    "swish": nn.SiLU,
    "tanh": nn.Tanh,
}


@functools.cache
def _act2fn() -> dict[str, object]:
    from transformers.activations import ACT2FN

    return dict(ACT2FN.items())


def is_known(name: object) -> bool:
    return isinstance(name, str) and (name in _NATIVE or name in _act2fn())


def hidden_activation(name: str) -> nn.Module:
    if name in _NATIVE:
        return _NATIVE[name]()
    if not is_known(name):
        raise ValueError(f"unsupported hidden_act {name!r}")
    from transformers.activations import ACT2FN

    return ACT2FN[name]
