"""What OpenVINO converts: the family's padded SDPA form (model registry), with the SPLADE head
and its max over tokens inside the graph, so no ``[batch x length x vocabulary]`` tensor leaves
it.

Inputs, all ``[B, L]`` int64: ``input_ids``, ``attention_mask`` (1: the key is attended; 0:
padding, or a ColBERT expansion token nobody attends to) and, with a SPLADE head, ``pool_mask``
(1: the token's logits count in the max; 0: padding or a removed special token). Outputs:
``hidden [B, L, H]`` and, with the head, ``sparse [B, V]`` = ``log1p(relu(max_t logits))``.

The masked max takes ``logits * pool_mask``: a zero where a token does not count changes
nothing after the ``relu`` (``relu(max(S + {0})) == relu(max(S))``), and keeps the graph free of
``-inf`` constants for the int8 quantizer.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import Tensor, nn

log = logging.getLogger("poolq.openvino")

INPUTS = ("input_ids", "attention_mask", "pool_mask")
FORM_VERSION = 1  # bump when what is converted changes: cached models are keyed by it


class GraphForm(nn.Module):
    """The padded form, and with ``mlm_head`` the SPLADE max inside the graph."""

    def __init__(self, form: nn.Module, mlm_head: nn.Module | None = None) -> None:
        super().__init__()
        self.form = form
        self.mlm_head = mlm_head

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, pool_mask: Tensor | None = None
    ) -> Tensor | tuple[Tensor, Tensor]:
        hidden = self.form(input_ids, attention_mask)  # [B, L, H]
        if self.mlm_head is None or pool_mask is None:
            return hidden
        logits = self.mlm_head(hidden)  # [B, L, V]: lives inside the graph only
        top = (logits * pool_mask.unsqueeze(-1).to(logits.dtype)).amax(1)  # [B, V]
        return hidden, torch.log1p(torch.relu(top))


def convert(form: GraphForm) -> Any:
    """``openvino.convert_model`` on the torch module (traced on a small example), inputs with a
    dynamic batch and length: the encoder reshapes to static buckets when it compiles."""
    import openvino as ov

    sparse = form.mlm_head is not None
    example = {
        "input_ids": torch.ones(2, 8, dtype=torch.int64),
        "attention_mask": torch.ones(2, 8, dtype=torch.int64),
    }
    if sparse:
        example["pool_mask"] = torch.ones(2, 8, dtype=torch.int64)
    names = INPUTS[: len(example)]
    with torch.inference_mode(False), torch.no_grad():
        model = ov.convert_model(
            form.eval(),
            example_input=example,
            input=[(n, ov.PartialShape([-1, -1]), ov.Type.i64) for n in names],
        )
    for port, name in zip(model.outputs, ("hidden", "sparse"), strict=False):
        port.get_tensor().set_names({name})
    return model
