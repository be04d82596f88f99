"""Padding-free ("packed") encoder for the BERT, RoBERTa and XLM-RoBERTa families.

All sequences of a batch are concatenated into one flat token stream ``[T]`` (no padding).
Embeddings, projections, LayerNorms and FFNs run on the flat ``[T, H]`` tensor; only the
attention is computed per sequence (``packed_attention.py``: SDPA per run of equal-length
sequences, or one varlen kernel call on CUDA in fp16/bf16). The output rows equal HF
``last_hidden_state`` rows of the non-padding tokens, in flat order.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from poolq.worker.engine.execution.compute_thread import yield_to_urgent
from poolq.worker.engine.models.attention_varlen import flash_signature
from poolq.worker.engine.models.encoder_spec import EncoderSpec
from poolq.worker.engine.models.hidden_act import hidden_activation
from poolq.worker.engine.models.packed_attention import (
    AttnPlan,
    check_packed,
    packed_attention,
    plan_attention,
)
from poolq.worker.engine.models.state_reader import StateReader
from poolq.worker.engine.models.uninit import EmptyEmbedding, EmptyLinear

try:  # optional CUDA varlen kernel
    from flash_attn import flash_attn_varlen_func as _flash_attn_varlen_func
except (ImportError, OSError):  # not installed, or built against another torch
    _flash_attn_varlen_func = None

# torch's varlen_attn behind flash_attn's signature; flash_attn's own only without it
_flash_varlen: Callable[..., Tensor] | None = flash_signature(_flash_attn_varlen_func)


class _Layer(nn.Module):
    """One post-LayerNorm transformer block with a fused QKV projection."""

    def __init__(self, spec: EncoderSpec) -> None:
        super().__init__()
        h, eps = spec.hidden_size, spec.layer_norm_eps
        self.num_heads = spec.num_heads
        self.head_dim = spec.head_dim
        self.qkv = EmptyLinear(h, 3 * h)  # rows: [query; key; value]
        self.attn_out = EmptyLinear(h, h)
        self.attn_norm = nn.LayerNorm(h, eps=eps)
        self.ffn_in = EmptyLinear(h, spec.intermediate_size)
        self.act: nn.Module = hidden_activation(spec.hidden_act)
        self.ffn_out = EmptyLinear(spec.intermediate_size, h)
        self.ffn_norm = nn.LayerNorm(h, eps=eps)

    def forward(self, x: Tensor, plan: AttnPlan, cu_seqlens: Tensor | None) -> Tensor:
        # x: [T, H]
        attn = packed_attention(self.qkv(x), plan, self.num_heads, cu_seqlens, _flash_varlen)
        x = self.attn_norm(x + self.attn_out(attn))
        return self.ffn_norm(x + self.ffn_out(self.act(self.ffn_in(x))))


class PackedEncoder(nn.Module):
    """BERT / RoBERTa / XLM-R encoder over a flat, padding-free token stream (inference only)."""

    def __init__(self, spec: EncoderSpec) -> None:
        super().__init__()
        self.spec = spec
        h = spec.hidden_size
        # no random init anywhere (uninit.py): the weights are always loaded before use
        self.word_emb = EmptyEmbedding(spec.vocab_size, h)
        self.pos_emb = EmptyEmbedding(spec.max_positions, h)
        self.type_emb = EmptyEmbedding(spec.type_vocab_size, h)
        self.emb_norm = nn.LayerNorm(h, eps=spec.layer_norm_eps)
        self.layers = nn.ModuleList(_Layer(spec) for _ in range(spec.num_layers))
        self.requires_grad_(False)
        self.eval()

    @classmethod
    def from_state_dict(cls, spec: EncoderSpec, state_dict: dict[str, Tensor]) -> PackedEncoder:
        enc = cls(spec)
        enc.load_hf_state_dict(state_dict)
        return enc

    def load_hf_state_dict(self, state_dict: dict[str, Tensor]) -> None:
        """Copy weights from a HF ``BertModel``/``RobertaModel``/``XLMRobertaModel`` state dict.

        Any key prefix (``bert.``, ``roberta.``, ``0.auto_model.``, ...) is detected from the word
        embedding key (``state_reader.py``). Pooler / MLM-head / classifier keys are ignored.
        """
        r = StateReader(state_dict, "embeddings.word_embeddings.weight")

        def read(module: nn.Linear | nn.LayerNorm, name: str) -> None:
            r.read(module.weight, f"{name}.weight")
            r.read(module.bias, f"{name}.bias")

        r.read(self.word_emb.weight, "embeddings.word_embeddings.weight")
        r.read(self.pos_emb.weight, "embeddings.position_embeddings.weight")
        r.read(self.type_emb.weight, "embeddings.token_type_embeddings.weight")
        read(self.emb_norm, "embeddings.LayerNorm")
        h = self.spec.hidden_size
        for i, layer in enumerate(self.layers):
            assert isinstance(layer, _Layer)
            p = f"encoder.layer.{i}."
            for w, fused in (("weight", layer.qkv.weight), ("bias", layer.qkv.bias)):
                # fused rows [query; key; value]: a slice each
                for j, n in enumerate(("query", "key", "value")):
                    r.read(fused[j * h : (j + 1) * h], f"{p}attention.self.{n}.{w}")
            read(layer.attn_out, f"{p}attention.output.dense")
            read(layer.attn_norm, f"{p}attention.output.LayerNorm")
            read(layer.ffn_in, f"{p}intermediate.dense")
            read(layer.ffn_out, f"{p}output.dense")
            read(layer.ffn_norm, f"{p}output.LayerNorm")
        r.load()

    def forward(
        self,
        input_ids: Tensor,
        seq_lens: list[int],
        token_type_ids: Tensor | None = None,
        key_mask_cpu: Tensor | None = None,
    ) -> Tensor:
        """``input_ids [T]`` int64 (the sequences concatenated, host ``seq_lens`` summing to
        ``T``) -> last-layer hidden states ``[T, H]`` in the same order. ``token_type_ids [T]``:
        segment ids (default zeros); ``key_mask_cpu`` host bool ``[T]``: False for tokens no token
        of their sequence attends to (ColBERT query expansion; their own rows are computed)."""
        t = check_packed(input_ids, seq_lens, key_mask_cpu)
        if seq_lens and (min(seq_lens) < 0 or max(seq_lens) > self.spec.max_seq_len):
            raise ValueError(f"sequence lengths must be in [0, {self.spec.max_seq_len}]")
        device = input_ids.device
        low_precision = input_ids.is_cuda and (
            self.word_emb.weight.dtype in (torch.float16, torch.bfloat16)
            or torch.is_autocast_enabled("cuda")  # autocast: fp32 residual, bf16 q/k/v
        )
        varlen = _flash_varlen is not None and low_precision
        plan = plan_attention(seq_lens, device, key_mask_cpu)

        # Positions restart at every sequence: offset + (0..L-1).
        lens_cpu = torch.tensor(seq_lens, dtype=torch.long)  # [B]
        starts_cpu = plan.cu_seqlens_cpu[:-1].long()  # [B]
        positions_cpu = torch.arange(t) - starts_cpu.repeat_interleave(lens_cpu, output_size=t)
        positions = (positions_cpu + self.spec.position_offset).to(device, non_blocking=True)

        x = self.word_emb(input_ids) + self.pos_emb(positions)  # [T, H]
        if token_type_ids is None:
            x = x + self.type_emb.weight[0]  # broadcast type-0 row
        else:
            x = x + self.type_emb(token_type_ids)
        x = self.emb_norm(x)

        # [B + 1] int32
        cu_seqlens = plan.cu_seqlens_cpu.to(device, non_blocking=True) if varlen else None
        for layer in self.layers:
            x = layer(x, plan, cu_seqlens)
            yield_to_urgent()  # a queued query-lane forward may run here (compute_thread.py)
        return x
