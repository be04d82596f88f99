"""The padded SDPA form of the packed BERT-family encoder (``packed_encoder.py``).

Graph compilers (OpenVINO's PyTorch frontend) take a traced module with static tensor shapes and
no host-side planning: the packed encoder plans its attention per batch on the host, so it cannot
be traced. :class:`PaddedEncoderForm` runs the *same* modules (no weight is copied: it holds the
packed encoder) over a right-padded ``[B, L]`` batch, with one ``scaled_dot_product_attention``
per layer under a key mask. Rows of real tokens equal the packed encoder's rows; padding rows are
garbage that callers drop. A family supplies it as ``Architecture.padded_form``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from poolq.worker.engine.models.packed_encoder import PackedEncoder, _Layer


class PaddedEncoderForm(nn.Module):
    """``(input_ids [B, L] int64, attention_mask [B, L] int64) -> hidden [B, L, H]``."""

    def __init__(self, packed: nn.Module) -> None:
        super().__init__()
        if not isinstance(packed, PackedEncoder):
            raise TypeError(f"expected a PackedEncoder, got {type(packed).__name__}")
        self.packed = packed

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        enc = self.packed
        b, length = input_ids.shape
        # right padding: each sequence's positions are 0..L-1 plus the family's offset
        positions = torch.arange(length, device=input_ids.device) + enc.spec.position_offset
        x = enc.word_emb(input_ids) + enc.pos_emb(positions).unsqueeze(0) + enc.type_emb.weight[0]
        x = enc.emb_norm(x)  # [B, L, H]
        keys = attention_mask.bool()[:, None, None, :]  # [B, 1, 1, L]: True, attended
        for layer in enc.layers:
            assert isinstance(layer, _Layer)
            heads, d = layer.num_heads, layer.head_dim
            qkv = layer.qkv(x).view(b, length, 3, heads, d)
            q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))  # each [B, heads, L, d]
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=keys)
            o = o.transpose(1, 2).reshape(b, length, heads * d)
            x = layer.attn_norm(x + layer.attn_out(o))
            x = layer.ffn_norm(x + layer.ffn_out(layer.act(layer.ffn_in(x))))
        return x
