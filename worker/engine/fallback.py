"""Fallback runner for architectures without a native packed encoder (decoder embedders,
DistilBERT, MPNet, ...): ``transformers.AutoModel`` on a padded batch, re-flattened to
``[T, hidden]`` so the pooling layer sees the same layout as from the packed encoder."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn


class PaddedAutoModelRunner(nn.Module):
    def __init__(self, path: Path, pad_token_id: int, dtype: torch.dtype) -> None:
        super().__init__()
        from transformers import AutoModel

        self.model = AutoModel.from_pretrained(
            str(path), dtype=dtype, trust_remote_code=False
        ).eval()
        self.pad_token_id = pad_token_id

    def forward(self, input_ids: torch.Tensor, seq_lens: list[int]) -> torch.Tensor:
        """``input_ids [T]`` flat -> hidden ``[T, H]`` (padding rows dropped)."""
        n, max_len = len(seq_lens), max(seq_lens, default=0)
        device = input_ids.device
        padded = torch.full(
            (n, max_len), self.pad_token_id, dtype=torch.long, device=device
        )  # [B, L]
        mask_cpu = torch.arange(max_len).unsqueeze(0) < torch.tensor(seq_lens).unsqueeze(
            1
        )  # [B, L]
        mask = mask_cpu.to(device, non_blocking=True)
        padded[mask] = input_ids
        out = self.model(
            input_ids=padded, attention_mask=mask.long()
        ).last_hidden_state  # [B, L, H]
        return out[mask]  # [T, H], row-major: sequence by sequence
