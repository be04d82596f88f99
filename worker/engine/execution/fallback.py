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

    def forward(
        self,
        input_ids: torch.Tensor,
        seq_lens: list[int],
        key_mask_cpu: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``input_ids [T]`` flat -> hidden ``[T, H]`` (padding rows dropped).

        ``key_mask_cpu``: optional host bool ``[T]``, False for tokens no token attends to
        (ColBERT query expansion); their rows are still computed and returned.
        ``token_type_ids``: optional ``[T]`` segment ids (a cross-encoder's pairs).
        """
        n, max_len = len(seq_lens), max(seq_lens, default=0)
        device = input_ids.device
        padded = torch.full((n, max_len), self.pad_token_id, dtype=torch.long, device=device)
        mask_cpu = torch.arange(max_len)[None, :] < torch.tensor(seq_lens)[:, None]  # [B, L]
        mask = mask_cpu.to(device, non_blocking=True)
        padded[mask] = input_ids
        attention = mask
        if key_mask_cpu is not None:
            if key_mask_cpu.shape != input_ids.shape:
                raise ValueError(
                    f"key_mask_cpu: expected shape {tuple(input_ids.shape)}, got {tuple(key_mask_cpu.shape)}"
                )
            attention_cpu = torch.zeros((n, max_len), dtype=torch.bool)  # [B, L]
            attention_cpu[mask_cpu] = key_mask_cpu.to(torch.bool)
            attention = attention_cpu.to(device, non_blocking=True)
        kw = {}
        if token_type_ids is not None:
            types = torch.zeros((n, max_len), dtype=torch.long, device=device)  # [B, L]
            types[mask] = token_type_ids
            kw["token_type_ids"] = types
        out = self.model(input_ids=padded, attention_mask=attention.long(), **kw)  # [B, L, H]
        return out.last_hidden_state[mask]  # [T, H], row-major: sequence by sequence
