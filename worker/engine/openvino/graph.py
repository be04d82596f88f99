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
# cache.FORM_VERSION: bump it when what is converted here changes (cached models are keyed by it)


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
    split_qkv(model)
    return model


def split_qkv(model: Any) -> int:
    """Each layer's fused query/key/value projection (``qkv``: one ``[3H, H]`` MatMul, its
    bias, a ``[B, L, 3, heads, d]`` Reshape and a Split) rewritten as three ``[H, H]`` MatMuls,
    each reshaped to ``[B, L, heads, d]`` where the Split's part went: the same arithmetic, in
    the form OpenVINO's int8 path fuses. With the fused form, NNCF's quantizers on the
    attention's inputs sit after the Split and run as separate f32 FakeQuantize ops; here each
    folds into its projection. Returns how many were rewritten."""
    import numpy as np
    import openvino.opset13 as ops

    done = 0
    for split in [op for op in model.get_ordered_ops() if op.get_type_name() == "Split"]:
        reshape = split.input_value(0).get_node()
        if reshape.get_type_name() != "Reshape" or len(split.outputs()) != 3:
            continue
        add = reshape.input_value(0).get_node()
        matmul = add.input_value(0).get_node() if add.get_type_name() == "Add" else None
        if matmul is None or matmul.get_type_name() != "MatMul":
            continue
        weight, bias = matmul.input_value(1).get_node(), add.input_value(1).get_node()
        shape = reshape.get_output_partial_shape(0)
        if (
            weight.get_type_name() != "Constant"
            or bias.get_type_name() != "Constant"
            or shape.rank.get_length() != 5
            or not shape[2].is_static
            or shape[2].get_length() != 3
            or not (shape[3].is_static and shape[4].is_static)
        ):
            continue
        attrs = matmul.get_attributes()
        if attrs["transpose_a"]:
            continue
        w, b = weight.get_data(), bias.get_data()
        heads, d = shape[3].get_length(), shape[4].get_length()
        h = heads * d
        if b.shape[-1] != 3 * h or (w.shape[0] if attrs["transpose_b"] else w.shape[1]) != 3 * h:
            continue
        x = matmul.input_value(0)
        target = ops.constant(np.array([0, 0, heads, d], dtype=np.int64))
        for j, part in enumerate(split.outputs()):
            rows = slice(j * h, (j + 1) * h)
            wj = w[rows] if attrs["transpose_b"] else w[:, rows]
            proj = ops.matmul(
                x, ops.constant(np.ascontiguousarray(wj)), False, attrs["transpose_b"]
            )
            proj.set_friendly_name(f"{matmul.get_friendly_name()}.{'qkv'[j]}")
            biased = ops.add(proj, ops.constant(np.ascontiguousarray(b[..., rows])))
            heads_out = ops.reshape(biased, target, special_zero=True)
            for use in list(part.get_target_inputs()):
                squeeze = use.get_node()
                if squeeze.get_type_name() != "Squeeze":
                    raise ValueError(f"split_qkv: unexpected {squeeze.get_type_name()} after Split")
                for consumer in list(squeeze.output(0).get_target_inputs()):
                    consumer.replace_source_output(heads_out.output(0))
        done += 1
    if done:
        model.validate_nodes_and_infer_types()
    log.debug("openvino: %d fused qkv projections split", done)
    return done
