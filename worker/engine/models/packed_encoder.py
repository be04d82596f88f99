"""Padding-free ("packed") encoder for the BERT, RoBERTa and XLM-RoBERTa families.

All sequences of a batch are concatenated into one flat token stream ``[T]`` (no padding).
Embeddings, projections, LayerNorms and FFNs run on the flat ``[T, H]`` tensor; only the
attention is computed per sequence (``packed_attention.py``):

* CPU (and CUDA without ``flash_attn``): one ``scaled_dot_product_attention`` call per run of
  consecutive equal-length sequences.
* CUDA in fp16/bf16 with ``flash_attn`` installed: a single ``flash_attn_varlen_func`` call.

Key masks: ``forward(..., key_mask_cpu=)`` marks tokens that no token attends to (ColBERT query
expansion ``[MASK]`` tokens); their own rows are still computed. Their run's SDPA call gets a key
mask; with flash-attn, runs holding such tokens are recomputed with masked SDPA after the varlen
call (flash varlen takes no key mask).

The output rows equal HF ``last_hidden_state`` rows of the non-padding tokens, in flat order.
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

    # ------------------------------------------------------------------ weights

    def load_hf_state_dict(self, state_dict: dict[str, Tensor]) -> None:
        """Copy weights from a HF ``BertModel``/``RobertaModel``/``XLMRobertaModel`` state dict.

        Any key prefix (``bert.``, ``roberta.``, ``0.auto_model.``, ...) is detected from the word
        embedding key (``state_reader.py``). Pooler / MLM-head / classifier keys are ignored.
        """
        r = StateReader(state_dict, "embeddings.word_embeddings.weight", _aliases)

        def ln(dst: nn.LayerNorm, name: str) -> None:
            r.read(dst.weight, f"{name}.LayerNorm.weight")
            r.read(dst.bias, f"{name}.LayerNorm.bias")

        r.read(self.word_emb.weight, "embeddings.word_embeddings.weight")
        r.read(self.pos_emb.weight, "embeddings.position_embeddings.weight")
        r.read(self.type_emb.weight, "embeddings.token_type_embeddings.weight")
        ln(self.emb_norm, "embeddings")
        h = self.spec.hidden_size
        for i, layer in enumerate(self.layers):
            assert isinstance(layer, _Layer)
            p = f"encoder.layer.{i}."
            for w, fused in (("weight", layer.qkv.weight), ("bias", layer.qkv.bias)):
                for j, n in enumerate(_QKV):  # fused rows [query; key; value]: a slice each
                    r.read(fused[j * h : (j + 1) * h], f"{p}attention.self.{n}.{w}")
            r.read(layer.attn_out.weight, f"{p}attention.output.dense.weight")
            r.read(layer.attn_out.bias, f"{p}attention.output.dense.bias")
            ln(layer.attn_norm, f"{p}attention.output")
            r.read(layer.ffn_in.weight, f"{p}intermediate.dense.weight")
            r.read(layer.ffn_in.bias, f"{p}intermediate.dense.bias")
            r.read(layer.ffn_out.weight, f"{p}output.dense.weight")
            r.read(layer.ffn_out.bias, f"{p}output.dense.bias")
            ln(layer.ffn_norm, f"{p}output")
        r.load()

    # ------------------------------------------------------------------ forward

    def forward(
        self,
        input_ids: Tensor,
        seq_lens: list[int],
        token_type_ids: Tensor | None = None,
        key_mask_cpu: Tensor | None = None,
    ) -> Tensor:
        """Encode a flat token stream.

        Args:
            input_ids: ``[T]`` int64, all sequences concatenated without padding.
            seq_lens: host-side per-sequence lengths, ``sum(seq_lens) == T``.
            token_type_ids: optional ``[T]`` segment ids (default: all zeros).
            key_mask_cpu: optional host bool ``[T]``: False for tokens that no token of their
                sequence attends to (their own rows are still computed).

        Returns:
            ``[T, H]`` last-layer hidden states, rows in the same order as ``input_ids``.
        """
        t = int(input_ids.shape[0])
        if input_ids.dim() != 1 or t != sum(seq_lens):
            raise ValueError(
                f"input_ids must be flat [sum(seq_lens)={sum(seq_lens)}], "
                f"got {tuple(input_ids.shape)}"
            )
        if seq_lens and (min(seq_lens) < 0 or max(seq_lens) > self.spec.max_seq_len):
            raise ValueError(f"sequence lengths must be in [0, {self.spec.max_seq_len}]")
        device = input_ids.device
        if key_mask_cpu is not None and (
            key_mask_cpu.shape != (t,) or key_mask_cpu.dtype != torch.bool
        ):
            raise ValueError(
                f"key_mask_cpu must be a host bool [{t}], got {key_mask_cpu.dtype} "
                f"{tuple(key_mask_cpu.shape)}"
            )
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

        cu_seqlens: Tensor | None = None
        if varlen:
            cu_seqlens = plan.cu_seqlens_cpu.to(device, non_blocking=True)  # [B + 1] int32

        for layer in self.layers:
            x = layer(x, plan, cu_seqlens)
            yield_to_urgent()  # a queued query-lane forward may run here (compute_thread.py)
        return x


_QKV = ("query", "key", "value")


def _aliases(key: str) -> tuple[str, ...]:
    """Old TF-converted checkpoints name LayerNorm parameters gamma / beta."""
    if key.endswith("LayerNorm.weight"):
        return key, key[: -len("weight")] + "gamma"
    if key.endswith("LayerNorm.bias"):
        return key, key[: -len("bias")] + "beta"
    return (key,)
