"""Heads that checkpoints carry beside the backbone, rebuilt from their state-dict tensors:
the MLM head of ``*ForMaskedLM`` (SPLADE), the classification heads of
``*ForSequenceClassification``, and plain linear projections (ColBERT, BGE-M3). Which weights
make a head is each family's layout (``models/``); the registry picks it by ``model_type``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from poolq.worker.engine.models.hidden_act import hidden_activation
from poolq.worker.engine.models.uninit import EmptyLinear


def take(state: Mapping[str, torch.Tensor], *names: str) -> torch.Tensor:
    for n in names:
        if n in state:
            return state[n]
    raise ValueError(f"checkpoint is missing the head weight; expected one of {list(names)}")


def linear_from(weight: torch.Tensor, bias: torch.Tensor | None = None) -> nn.Linear:
    out_f, in_f = weight.shape
    lin = EmptyLinear(in_f, out_f, bias=bias is not None)  # no random init: copied below
    with torch.no_grad():
        lin.weight.copy_(weight)
        if bias is not None:
            lin.bias.copy_(bias)
    return lin


class MLMHead(nn.Module):
    """``decoder(LayerNorm(act(dense(h))))``: hidden ``[t, H]`` -> vocabulary logits ``[t, V]``."""

    def __init__(self, dense: nn.Linear, act: str, norm: nn.LayerNorm, decoder: nn.Linear) -> None:
        super().__init__()
        self.dense, self.norm, self.decoder = dense, norm, decoder
        self.act = hidden_activation(act)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.norm(self.act(self.dense(hidden))))


def layer_norm_from(weight: torch.Tensor, bias: torch.Tensor, eps: float) -> nn.LayerNorm:
    norm = nn.LayerNorm(weight.shape[0], eps=eps)
    with torch.no_grad():
        norm.weight.copy_(weight)
        norm.bias.copy_(bias)
    return norm


def family_head(
    state: Mapping[str, torch.Tensor], config: Mapping[str, Any], head: str
) -> nn.Module:
    """A head in the family's layout (model registry): ``head`` is ``"mlm_head"`` (a
    ``*ForMaskedLM`` checkpoint's) or ``"classifier"`` (the layers between the pooled row and
    the logits)."""
    from poolq.worker.engine.models import require_architecture

    what = {"mlm_head": "MLM head", "classifier": "classifier"}[head]
    arch = require_architecture(config.get("model_type"), f"{what} layout")
    build = getattr(arch, head)
    if build is None:
        raise ValueError(f"model family {arch.family!r} has no {what} layout")
    return build(arch.with_defaults(config), state)
