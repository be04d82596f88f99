"""Heads that checkpoints carry beside the backbone, rebuilt from their state-dict tensors:
the MLM head of ``*ForMaskedLM`` (SPLADE), the classification heads of
``*ForSequenceClassification``, and plain linear projections (ColBERT, BGE-M3)."""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from poolq.worker.engine.hidden_act import hidden_activation
from poolq.worker.engine.uninit import EmptyLinear


def _take(state: Mapping[str, torch.Tensor], *names: str) -> torch.Tensor:
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

    def fuse_onednn(self) -> None:
        """fp32 on the CPU: both linears on oneDNN, the activation fused into ``dense``."""
        from poolq.worker.engine.onednn_linear import OneDNNLinear, post_op_for

        post = post_op_for(self.act)
        self.dense = OneDNNLinear(self.dense, post)  # type: ignore[assignment]
        if post is not None:
            self.act = nn.Identity()
        self.decoder = OneDNNLinear(self.decoder)  # type: ignore[assignment]


def mlm_head_from_state(
    state: Mapping[str, torch.Tensor], model_type: str, hidden_act: str, eps: float
) -> MLMHead:
    if model_type == "bert":
        p = "cls.predictions."
        dense = linear_from(state[p + "transform.dense.weight"], state[p + "transform.dense.bias"])
        ln_w, ln_b = state[p + "transform.LayerNorm.weight"], state[p + "transform.LayerNorm.bias"]
        dec_w = _take(
            state,
            p + "decoder.weight",
            "bert.embeddings.word_embeddings.weight",
            "embeddings.word_embeddings.weight",
        )
        dec_b = _take(state, p + "bias", p + "decoder.bias")
        act = hidden_act
    elif model_type in ("roberta", "xlm-roberta"):
        p = "lm_head."
        dense = linear_from(state[p + "dense.weight"], state[p + "dense.bias"])
        ln_w, ln_b = state[p + "layer_norm.weight"], state[p + "layer_norm.bias"]
        dec_w = _take(state, p + "decoder.weight", "roberta.embeddings.word_embeddings.weight")
        dec_b = _take(state, p + "bias", p + "decoder.bias")
        act = "gelu"
    else:
        raise ValueError(
            f"no MLM head layout for model_type {model_type!r}; expected bert, roberta or xlm-roberta"
        )
    norm = nn.LayerNorm(ln_w.shape[0], eps=eps)
    with torch.no_grad():
        norm.weight.copy_(ln_w)
        norm.bias.copy_(ln_b)
    return MLMHead(dense, act, norm, linear_from(dec_w, dec_b))


def classifier_from_state(state: Mapping[str, torch.Tensor], model_type: str) -> nn.Module:
    """The layers between the CLS row and the logits."""
    if model_type == "bert":
        # BertForSequenceClassification: pooler (dense + tanh) -> classifier
        pooler = linear_from(state["bert.pooler.dense.weight"], state["bert.pooler.dense.bias"])
        return nn.Sequential(
            pooler, nn.Tanh(), linear_from(state["classifier.weight"], state["classifier.bias"])
        )
    if model_type in ("roberta", "xlm-roberta"):
        # RobertaClassificationHead: dense -> tanh -> out_proj
        dense = linear_from(state["classifier.dense.weight"], state["classifier.dense.bias"])
        out = linear_from(state["classifier.out_proj.weight"], state["classifier.out_proj.bias"])
        return nn.Sequential(dense, nn.Tanh(), out)
    raise ValueError(
        f"no classifier layout for model_type {model_type!r}; expected bert, roberta or xlm-roberta"
    )
