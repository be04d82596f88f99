"""Padding-free ModernBERT over a flat token stream ``[T]``: norms, projections and the GeGLU
MLP on the flat ``[T, H]`` tensor; positions restart at every sequence; attention per sequence,
bidirectional, bucketed by length (``causal_attention.plan_causal`` lays the buckets out), with
a key-padding mask and, in local layers, the band ``|i - j| <= half_window``."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from poolq.worker.engine.execution.compute_thread import yield_to_urgent
from poolq.worker.engine.models.attention_varlen import (
    FULL,
    VarlenArgs,
    local_window,
    use_varlen,
    varlen_args,
    varlen_attention,
)
from poolq.worker.engine.models.causal_attention import CausalPlan, attend_buckets, plan_causal
from poolq.worker.engine.models.hidden_act import hidden_activation
from poolq.worker.engine.models.modernbert import ModernBertSpec
from poolq.worker.engine.models.packed_attention import check_packed
from poolq.worker.engine.models.packed_decoder import rotate_half
from poolq.worker.engine.models.state_reader import StateReader
from poolq.worker.engine.models.uninit import EmptyEmbedding, EmptyLinear


def _rope(positions: Tensor, theta: float, d: int) -> tuple[Tensor, Tensor]:
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    freqs = positions.float()[:, None] * inv_freq.to(positions.device)[None, :]  # [T, d / 2]
    emb = torch.cat((freqs, freqs), dim=-1)[:, None, :]  # [T, 1, d]
    return emb.cos(), emb.sin()


def _attend(
    q: Tensor, k: Tensor, v: Tensor, valid: Tensor | None, half_window: int | None
) -> Tensor:
    """``q, k, v [n, L, h, d]``; ``valid`` bool ``[n, L]`` (None: all real) -> ``[n, L, h, d]``."""
    length = q.shape[1]
    mask = None if valid is None else valid[:, None, None, :]  # [n, 1, 1, L]
    if half_window is not None and length > half_window + 1:
        pos = torch.arange(length, device=q.device)
        band = (pos[:, None] - pos[None, :]).abs() <= half_window  # [L, L]
        mask = band if mask is None else mask & band
    o = F.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask
    )
    return o.transpose(1, 2)


def _bucket_masks(
    plan: CausalPlan, key_mask_cpu: Tensor | None, device: torch.device
) -> list[Tensor | None]:
    """Per bucket: the bool ``[n, L]`` keys its rows may attend to (padding slots False, and
    the ``key_mask_cpu`` [T] False tokens: a ColBERT query's expansion tokens); None: all."""
    out: list[Tensor | None] = []
    for members in plan.buckets:
        length = plan.seq_lens[members[0]]
        starts = torch.tensor([plan.starts[i] for i in members])  # [n]
        lens = torch.tensor([plan.seq_lens[i] for i in members])  # [n]
        pos = torch.arange(length)  # [L]
        valid = pos[None, :] < lens[:, None]  # [n, L]
        if key_mask_cpu is not None:
            rows = starts[:, None] + torch.minimum(pos[None, :], lens[:, None] - 1)  # [n, L]
            valid = valid & key_mask_cpu[rows]
        out.append(None if bool(valid.all()) else valid.to(device))
    return out


class _Layer(nn.Module):
    def __init__(self, spec: ModernBertSpec, index: int) -> None:
        super().__init__()
        h = spec.hidden_size
        self.heads, self.head_dim = spec.num_heads, spec.head_dim
        self.is_global = spec.global_layers[index]
        self.half_window = None if self.is_global else spec.half_window
        norm = lambda: nn.LayerNorm(h, eps=spec.norm_eps, bias=spec.norm_bias)  # noqa: E731
        self.attn_norm: nn.Module = nn.Identity() if index == 0 else norm()
        self.wqkv = EmptyLinear(h, 3 * h, spec.attention_bias)
        self.wo = EmptyLinear(h, h, spec.attention_bias)
        self.mlp_norm = norm()
        self.wi = EmptyLinear(h, 2 * spec.intermediate_size, spec.mlp_bias)  # [input; gate]
        self.act = hidden_activation(spec.hidden_act)
        self.mlp_out = EmptyLinear(spec.intermediate_size, h, spec.mlp_bias)

    def attention(
        self,
        x: Tensor,
        cos: Tensor,
        sin: Tensor,
        plan: CausalPlan,
        valid: list,
        varlen: VarlenArgs | None = None,
    ) -> Tensor:
        t, heads, d = x.shape[0], self.heads, self.head_dim
        q, k, v = self.wqkv(x).view(t, 3, heads, d).unbind(1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if varlen is not None:  # CUDA, no key mask: one kernel call, the band as its window
            window = FULL if self.half_window is None else local_window(self.half_window)
            return varlen_attention(q, k, v, varlen, window).reshape(t, heads * d)

        def attend(b: int, qb: Tensor, kb: Tensor, vb: Tensor) -> Tensor:
            return _attend(qb, kb, vb, valid[b], self.half_window)

        return attend_buckets(q, k, v, plan, q.new_empty(t, heads * d), attend)

    def forward(
        self,
        x: Tensor,
        rope: dict[bool, tuple[Tensor, Tensor]],
        plan: CausalPlan,
        valid: list,
        varlen: VarlenArgs | None = None,
    ) -> Tensor:
        cos, sin = rope[self.is_global]
        x = x + self.wo(self.attention(self.attn_norm(x), cos, sin, plan, valid, varlen))
        inp, gate = self.wi(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.mlp_out(self.act(inp) * gate)


class PackedModernBert(nn.Module):
    def __init__(self, spec: ModernBertSpec) -> None:
        super().__init__()
        self.spec = spec
        h = spec.hidden_size
        self.embed = EmptyEmbedding(spec.vocab_size, h)
        self.emb_norm = nn.LayerNorm(h, eps=spec.norm_eps, bias=spec.norm_bias)
        self.layers = nn.ModuleList(_Layer(spec, i) for i in range(spec.num_layers))
        self.final_norm = nn.LayerNorm(h, eps=spec.norm_eps, bias=spec.norm_bias)
        self.requires_grad_(False)
        self.eval()

    @classmethod
    def from_state_dict(cls, spec: ModernBertSpec, state: dict[str, Tensor]) -> PackedModernBert:
        """From a transformers ``ModernBertModel`` (or ``*For...``) state dict; the key prefix
        is found from the token embedding key (``state_reader.py``)."""
        m = cls(spec)
        r = StateReader(state, "embeddings.tok_embeddings.weight")

        def read(module: nn.Module, name: str) -> None:  # a LayerNorm or a Linear
            assert isinstance(module, nn.LayerNorm | nn.Linear)
            r.read(module.weight, name + ".weight")
            if module.bias is not None:
                r.read(module.bias, name + ".bias")

        r.read(m.embed.weight, "embeddings.tok_embeddings.weight")
        read(m.emb_norm, "embeddings.norm")
        read(m.final_norm, "final_norm")
        for i, layer in enumerate(m.layers):
            assert isinstance(layer, _Layer)
            p = f"layers.{i}."
            if i > 0:
                read(layer.attn_norm, p + "attn_norm")
            read(layer.wqkv, p + "attn.Wqkv")
            read(layer.wo, p + "attn.Wo")
            read(layer.mlp_norm, p + "mlp_norm")
            read(layer.wi, p + "mlp.Wi")
            read(layer.mlp_out, p + "mlp.Wo")
        r.load()
        return m

    def forward(
        self, input_ids: Tensor, seq_lens: list[int], key_mask_cpu: Tensor | None = None
    ) -> Tensor:
        t = check_packed(input_ids, seq_lens, key_mask_cpu)
        if seq_lens and max(seq_lens) > self.spec.max_positions:
            raise ValueError(f"sequence lengths must be at most {self.spec.max_positions}")
        if key_mask_cpu is not None and bool(key_mask_cpu.all()):
            key_mask_cpu = None
        device = input_ids.device
        lens_cpu = torch.tensor(seq_lens, dtype=torch.long)
        starts_cpu = torch.cumsum(lens_cpu, 0) - lens_cpu
        positions = (torch.arange(t) - starts_cpu.repeat_interleave(lens_cpu, output_size=t)).to(
            device
        )
        d = self.spec.head_dim
        rope = {
            True: _rope(positions, self.spec.global_theta, d),
            False: _rope(positions, self.spec.local_theta, d),
        }
        plan = plan_causal(seq_lens, device)
        valid = _bucket_masks(plan, key_mask_cpu, device)
        on_varlen = key_mask_cpu is None and use_varlen(self.embed.weight)
        varlen = varlen_args(seq_lens, device) if on_varlen else None
        x = self.emb_norm(self.embed(input_ids))
        for layer in self.layers:
            x = layer(x, rope, plan, valid, varlen)
            yield_to_urgent()
        return self.final_norm(x)
