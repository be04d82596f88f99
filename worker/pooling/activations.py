"""Activations a model config may name. Only ``torch.nn`` activation modules are allowed:
a config is data, and a dotted path to an arbitrary callable would run code from it."""

from __future__ import annotations

import torch
from torch import nn

_ALLOWED: dict[str, type[nn.Module]] = {
    cls.__name__: cls
    for cls in (
        nn.Identity,
        nn.Sigmoid,
        nn.Tanh,
        nn.Softmax,
        nn.LogSoftmax,
        nn.ReLU,
        nn.GELU,
        nn.SiLU,
        nn.LeakyReLU,
        nn.ELU,
        nn.Softplus,
        nn.Hardtanh,
        nn.Mish,
        nn.LogSigmoid,
    )
}
_PREFIXES = ("torch.nn.modules.activation.", "torch.nn.modules.linear.", "torch.nn.")


def activation_from_name(name: str) -> nn.Module:
    """``"torch.nn.modules.activation.Sigmoid"``, ``"torch.nn.Sigmoid"`` or ``"Sigmoid"``."""
    short = next((name[len(p) :] for p in _PREFIXES if name.startswith(p)), name)
    cls = _ALLOWED.get(short)
    if cls is None or ("." in name and not name.startswith(_PREFIXES)):
        raise ValueError(
            f"activation {name!r} is not allowed: expected a torch.nn activation, one of {sorted(_ALLOWED)}"
        )
    if cls in (nn.Softmax, nn.LogSoftmax):
        return cls(dim=-1)
    return cls()


def classification_activation(problem_type: str | None, num_labels: int) -> nn.Module:
    """The activation HF's ``problem_type`` implies; one label means a sigmoid score."""
    if problem_type == "regression":
        return nn.Identity()
    if problem_type == "multi_label_classification" or num_labels == 1:
        return nn.Sigmoid()
    if problem_type in (None, "single_label_classification"):
        return nn.Softmax(dim=-1)
    raise ValueError(
        f"unknown problem_type {problem_type!r}; expected regression, "
        "single_label_classification or multi_label_classification"
    )


def apply_rowwise(x: torch.Tensor, act: nn.Module, enabled: list[bool]) -> torch.Tensor:
    """Apply ``act`` to the rows where ``enabled`` (one flag per row); other rows pass through."""
    if all(enabled):
        return act(x)
    if not any(enabled):
        return x
    mask_cpu = torch.tensor(enabled)
    out = x.clone()
    rows_dev = torch.nonzero(mask_cpu).squeeze(1).to(x.device, non_blocking=True)
    out[rows_dev] = act(x.index_select(0, rows_dev))
    return out
