"""Padding-free decoder (Llama / Mistral / Qwen2 / Qwen3) over a flat token stream ``[T]``.

Projections, norms and the MLP run on the flat ``[T, H]`` tensor; positions restart at every
sequence (or continue after its cached rows: chunked prefill); attention is causal within each
sequence (``causal_attention.py``). The output rows equal transformers' ``last_hidden_state``
(after the final RMSNorm) for the real tokens, in flat order.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from poolq.worker.engine.execution.compute_thread import yield_to_urgent
from poolq.worker.engine.models.causal_attention import KVCache, causal_attention, plan_causal
from poolq.worker.engine.models.hidden_act import hidden_activation
from poolq.worker.engine.models.llama import DecoderSpec
from poolq.worker.engine.models.packed_attention import check_packed
from poolq.worker.engine.models.state_reader import StateReader
from poolq.worker.engine.models.uninit import EmptyEmbedding, EmptyLinear


class RMSNorm(nn.Module):
    """transformers' ``LlamaRMSNorm``: normalised in fp32, scaled in the input dtype."""

    def __init__(self, width: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(width))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


def rotate_half(x: Tensor) -> Tensor:
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class _Layer(nn.Module):
    def __init__(self, spec: DecoderSpec) -> None:
        super().__init__()
        h, d = spec.hidden_size, spec.head_dim
        self.heads, self.kv_heads, self.head_dim = spec.num_heads, spec.num_kv_heads, d
        self.window = spec.sliding_window
        self.in_norm = RMSNorm(h, spec.rms_norm_eps)
        # rows: [query (heads * d); key (kv * d); value (kv * d)]
        self.qkv = EmptyLinear(h, (spec.num_heads + 2 * spec.num_kv_heads) * d, spec.qkv_bias)
        self.q_norm = RMSNorm(d, spec.rms_norm_eps) if spec.qk_norm else None
        self.k_norm = RMSNorm(d, spec.rms_norm_eps) if spec.qk_norm else None
        self.o_proj = EmptyLinear(spec.num_heads * d, h, spec.o_bias)
        self.post_norm = RMSNorm(h, spec.rms_norm_eps)
        self.gate_up = EmptyLinear(h, 2 * spec.intermediate_size, spec.mlp_bias)  # [gate; up]
        self.act = hidden_activation(spec.hidden_act)
        self.down = EmptyLinear(spec.intermediate_size, h, spec.mlp_bias)

    def forward(self, x: Tensor, cos: Tensor, sin: Tensor, plan: object, index: int) -> Tensor:
        t, d = x.shape[0], self.head_dim
        q, k, v = self.qkv(self.in_norm(x)).split(
            [self.heads * d, self.kv_heads * d, self.kv_heads * d], dim=-1
        )
        q, k, v = q.view(t, self.heads, d), k.view(t, self.kv_heads, d), v.view(t, -1, d)
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        cos_h, sin_h = cos[:, None, :], sin[:, None, :]  # [T, 1, d]: broadcast over heads
        q = q * cos_h + rotate_half(q) * sin_h
        k = k * cos_h + rotate_half(k) * sin_h
        attn = causal_attention(q, k, v, plan, index, self.window)  # type: ignore[arg-type]
        x = x + self.o_proj(attn)
        gate, up = self.gate_up(self.post_norm(x)).chunk(2, dim=-1)
        return x + self.down(self.act(gate) * up)


class PackedDecoder(nn.Module):
    """Causal decoder over a flat, padding-free token stream (inference only)."""

    causal = True  # the runner may split a sequence across batches (chunked prefill)

    def __init__(self, spec: DecoderSpec) -> None:
        super().__init__()
        self.spec = spec
        self.embed = EmptyEmbedding(spec.vocab_size, spec.hidden_size)
        self.layers = nn.ModuleList(_Layer(spec) for _ in range(spec.num_layers))
        self.norm = RMSNorm(spec.hidden_size, spec.rms_norm_eps)
        d = spec.head_dim
        exponent = torch.arange(0, d, 2, dtype=torch.int64).float() / d
        self.register_buffer("inv_freq", 1.0 / (spec.rope_theta**exponent), persistent=False)
        self.requires_grad_(False)
        self.eval()

    @classmethod
    def from_state_dict(cls, spec: DecoderSpec, state: dict[str, Tensor]) -> PackedDecoder:
        """From a transformers ``*Model`` / ``*ForCausalLM`` state dict; the key prefix
        (``model.``, ``0.auto_model.``, none) is found from the embedding key."""
        dec = cls(spec)
        r = StateReader(state, "embed_tokens.weight")
        r.read(dec.embed.weight, "embed_tokens.weight")
        r.read(dec.norm.weight, "norm.weight")
        for i, layer in enumerate(dec.layers):
            assert isinstance(layer, _Layer)
            p = f"layers.{i}."
            r.read(layer.in_norm.weight, f"{p}input_layernorm.weight")
            r.read(layer.post_norm.weight, f"{p}post_attention_layernorm.weight")
            r.read_cat(layer.qkv.weight, [f"{p}self_attn.{n}_proj.weight" for n in "qkv"])
            r.read(layer.o_proj.weight, f"{p}self_attn.o_proj.weight")
            r.read_cat(layer.gate_up.weight, [f"{p}mlp.{n}_proj.weight" for n in ("gate", "up")])
            r.read(layer.down.weight, f"{p}mlp.down_proj.weight")
            if layer.qkv.bias is not None:
                r.read_cat(layer.qkv.bias, [f"{p}self_attn.{n}_proj.bias" for n in "qkv"])
            if layer.o_proj.bias is not None:
                r.read(layer.o_proj.bias, f"{p}self_attn.o_proj.bias")
            if layer.gate_up.bias is not None and layer.down.bias is not None:
                r.read_cat(layer.gate_up.bias, [f"{p}mlp.{n}_proj.bias" for n in ("gate", "up")])
                r.read(layer.down.bias, f"{p}mlp.down_proj.bias")
            if layer.q_norm is not None and layer.k_norm is not None:
                r.read(layer.q_norm.weight, f"{p}self_attn.q_norm.weight")
                r.read(layer.k_norm.weight, f"{p}self_attn.k_norm.weight")
        r.load()
        return dec

    def forward(
        self,
        input_ids: Tensor,
        seq_lens: list[int],
        key_mask_cpu: Tensor | None = None,
        *,
        caches: Sequence[KVCache | None] | None = None,
    ) -> Tensor:
        """``input_ids [T]`` flat -> ``[T, H]``. ``caches``: per sequence, ``None`` or the
        :class:`KVCache` of its earlier chunks; this chunk's keys and values are appended to it
        and its positions continue after the cached rows."""
        t = check_packed(input_ids, seq_lens)
        if key_mask_cpu is not None and not bool(key_mask_cpu.all()):
            raise ValueError("a causal decoder takes no key mask (ColBERT query forms)")
        device = input_ids.device
        cache_list: list[KVCache | None] = (
            list(caches) if caches is not None else [None] * len(seq_lens)
        )
        past = [c.num_tokens if c is not None else 0 for c in cache_list]
        if any(p + n > self.spec.max_positions for p, n in zip(past, seq_lens, strict=True)):
            raise ValueError(f"sequence lengths must be at most {self.spec.max_positions}")
        lens_cpu = torch.tensor(seq_lens, dtype=torch.long)
        starts_cpu = torch.cumsum(lens_cpu, 0) - lens_cpu
        shift_cpu = torch.tensor(past, dtype=torch.long) - starts_cpu  # [B]
        positions_cpu = torch.arange(t) + shift_cpu.repeat_interleave(lens_cpu, output_size=t)
        inv_freq: Tensor = self.inv_freq  # type: ignore[assignment]  # a buffer: [d / 2]
        freqs = positions_cpu.to(device).float()[:, None] * inv_freq[None, :]  # [T, d / 2]
        emb = torch.cat((freqs, freqs), dim=-1)  # [T, d], fp32
        x = self.embed(input_ids)  # [T, H]
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        plan = plan_causal(seq_lens, device, cache_list)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, plan, i)
            yield_to_urgent()  # a queued query-lane forward may run here (compute_thread.py)
        return self.norm(x)
