"""Padding-free ("packed") encoder for the BERT, RoBERTa and XLM-RoBERTa families.

All sequences of a batch are concatenated into one flat token stream ``[T]`` (no padding).
Embeddings, projections, LayerNorms and FFNs run on the flat ``[T, H]`` tensor; only the
attention is computed per sequence:

* CPU (and CUDA without ``flash_attn``): one 4-D ``scaled_dot_product_attention`` call per run
  of consecutive equal-length sequences, ``[n, heads, L, head_dim]``, no mask.
* CUDA in fp16/bf16 with ``flash_attn`` installed: a single ``flash_attn_varlen_func`` call.

Key masks: ``forward(..., key_mask_cpu=)`` marks tokens that no token attends to (ColBERT query
expansion ``[MASK]`` tokens); their own rows are still computed. A run holding such a token gets
a bool ``attn_mask [n, 1, 1, L]`` in its SDPA call; with flash-attn, those runs are recomputed
with masked SDPA after the varlen call (flash varlen takes no key mask). Without a key mask
nothing changes.

The output rows equal HF ``last_hidden_state`` rows of the non-padding tokens, in flat order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers.activations import ACT2FN

try:  # optional CUDA varlen kernel
    from flash_attn import flash_attn_varlen_func as _flash_attn_varlen_func
except (ImportError, OSError):  # not installed, or built against another torch
    _flash_attn_varlen_func = None

_flash_varlen: Callable[..., Tensor] | None = _flash_attn_varlen_func

SUPPORTED_MODEL_TYPES = ("bert", "roberta", "xlm-roberta")


@dataclass(frozen=True)
class EncoderSpec:
    """The hyper-parameters the packed encoder needs, read from a HF config."""

    model_type: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    hidden_act: str
    # First position id: 0 for BERT, padding_idx + 1 for RoBERTa / XLM-R.
    position_offset: int

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def max_seq_len(self) -> int:
        return self.max_positions - self.position_offset

    @classmethod
    def from_hf_config(cls, config: Any) -> EncoderSpec:
        model_type = getattr(config, "model_type", None)
        if model_type not in SUPPORTED_MODEL_TYPES:
            raise ValueError(
                f"PackedEncoder does not support model_type {model_type!r}; "
                f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
            )
        # transformers 5.x dropped the attribute (absolute only); 4.x configs may still carry it.
        pos_type = getattr(config, "position_embedding_type", "absolute") or "absolute"
        if pos_type != "absolute":
            raise ValueError(
                f"PackedEncoder supports absolute position embeddings only, got {pos_type!r}"
            )
        if getattr(config, "is_decoder", False):
            raise ValueError("PackedEncoder is a bidirectional encoder; config.is_decoder=True")
        if not isinstance(config.hidden_act, str) or config.hidden_act not in ACT2FN:
            raise ValueError(f"unsupported hidden_act {config.hidden_act!r}")
        if config.hidden_size % config.num_attention_heads != 0:
            raise ValueError(
                f"hidden_size {config.hidden_size} is not a multiple of "
                f"num_attention_heads {config.num_attention_heads}"
            )
        offset = 0 if model_type == "bert" else int(config.pad_token_id) + 1
        return cls(
            model_type=model_type,
            vocab_size=int(config.vocab_size),
            hidden_size=int(config.hidden_size),
            num_layers=int(config.num_hidden_layers),
            num_heads=int(config.num_attention_heads),
            intermediate_size=int(config.intermediate_size),
            max_positions=int(config.max_position_embeddings),
            type_vocab_size=int(config.type_vocab_size),
            layer_norm_eps=float(config.layer_norm_eps),
            hidden_act=config.hidden_act,
            position_offset=offset,
        )


@dataclass(frozen=True)
class _AttnPlan:
    """Host-side description of the packed batch, computed once per forward."""

    # (row start, number of sequences, their common length) per run of equal-length sequences.
    groups: list[tuple[int, int, int]]
    cu_seqlens_cpu: Tensor  # [B + 1] int32, prefix sums of seq_lens
    max_seqlen: int
    # Per group: None, or bool [n, 1, 1, L] on the device (True: the key is attended to).
    key_masks: tuple[Tensor | None, ...] = ()


def _group_key_masks(
    groups: list[tuple[int, int, int]], key_mask_cpu: Tensor, device: torch.device
) -> tuple[Tensor | None, ...]:
    """Built once per forward on the host; runs whose keys are all attended get None. One
    host-to-device copy per masked run (non-blocking from pinned memory on CUDA)."""
    masks: list[Tensor | None] = []
    for start, n, length in groups:
        run_cpu = key_mask_cpu[start : start + n * length]  # [n * L]
        if bool(run_cpu.all()):
            masks.append(None)
            continue
        m_cpu = run_cpu.view(n, 1, 1, length)  # broadcast over heads and query rows
        if device.type == "cuda":
            m_cpu = m_cpu.pin_memory()
        masks.append(m_cpu.to(device, non_blocking=True))
    return tuple(masks)


def _plan(seq_lens: list[int]) -> _AttnPlan:
    groups: list[tuple[int, int, int]] = []
    start = 0
    for length in seq_lens:
        if groups and groups[-1][2] == length:
            g_start, n, _ = groups[-1]
            groups[-1] = (g_start, n + 1, length)
        else:
            groups.append((start, 1, length))
        start += length
    return _AttnPlan(
        groups=[g for g in groups if g[2] > 0],
        cu_seqlens_cpu=torch.tensor([0, *accumulate(seq_lens)], dtype=torch.int32),
        max_seqlen=max(seq_lens, default=0),
    )


class _Layer(nn.Module):
    """One post-LayerNorm transformer block with a fused QKV projection."""

    def __init__(self, spec: EncoderSpec) -> None:
        super().__init__()
        h, eps = spec.hidden_size, spec.layer_norm_eps
        self.num_heads = spec.num_heads
        self.head_dim = spec.head_dim
        self.qkv = nn.Linear(h, 3 * h)  # rows: [query; key; value]
        self.attn_out = nn.Linear(h, h)
        self.attn_norm = nn.LayerNorm(h, eps=eps)
        self.ffn_in = nn.Linear(h, spec.intermediate_size)
        self.act: nn.Module = ACT2FN[spec.hidden_act]
        self.ffn_out = nn.Linear(spec.intermediate_size, h)
        self.ffn_norm = nn.LayerNorm(h, eps=eps)

    def forward(self, x: Tensor, plan: _AttnPlan, cu_seqlens: Tensor | None) -> Tensor:
        # x: [T, H]
        attn = self._attention(self.qkv(x), plan, cu_seqlens)  # [T, H]
        x = self.attn_norm(x + self.attn_out(attn))
        return self.ffn_norm(x + self.ffn_out(self.act(self.ffn_in(x))))

    def _attention(self, qkv: Tensor, plan: _AttnPlan, cu_seqlens: Tensor | None) -> Tensor:
        # qkv: [T, 3H] -> [T, 3, heads, d]
        t = qkv.shape[0]
        qkv = qkv.view(t, 3, self.num_heads, self.head_dim)
        masks = plan.key_masks or (None,) * len(plan.groups)
        if cu_seqlens is not None and _flash_varlen is not None:
            q, k, v = qkv.unbind(1)  # each [T, heads, d]
            out = _flash_varlen(
                q,
                k,
                v,
                cu_seqlens,  # cu_seqlens_q
                cu_seqlens,  # cu_seqlens_k
                plan.max_seqlen,  # max_seqlen_q
                plan.max_seqlen,  # max_seqlen_k
                dropout_p=0.0,
                causal=False,
            )  # [T, heads, d]
            out = out.reshape(t, -1)  # [T, H]
            # flash varlen takes no key mask: masked runs (queries) are redone with SDPA
            for (start, n, length), mask in zip(plan.groups, masks, strict=True):
                if mask is not None:
                    self._sdpa_run(qkv, out, start, n, length, mask)
            return out

        out = qkv.new_empty(t, self.num_heads * self.head_dim)  # [T, H]
        for (start, n, length), mask in zip(plan.groups, masks, strict=True):
            self._sdpa_run(qkv, out, start, n, length, mask)
        return out

    def _sdpa_run(
        self, qkv: Tensor, out: Tensor, start: int, n: int, length: int, mask: Tensor | None
    ) -> None:
        """Attention of one run of ``n`` sequences of ``length`` tokens into ``out`` rows.
        ``mask``: None or bool ``[n, 1, 1, L]`` (False: key not attended to)."""
        end = start + n * length
        # [n, L, 3, heads, d] -> three [n, heads, L, d] views (no copies)
        q, k, v = qkv[start:end].view(n, length, 3, self.num_heads, self.head_dim).unbind(2)
        o = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask
        )  # [n, heads, L, d]
        out[start:end].view(n, length, self.num_heads, self.head_dim).copy_(o.transpose(1, 2))


class PackedEncoder(nn.Module):
    """BERT / RoBERTa / XLM-R encoder over a flat, padding-free token stream (inference only)."""

    def __init__(self, spec: EncoderSpec) -> None:
        super().__init__()
        self.spec = spec
        h = spec.hidden_size
        self.word_emb = nn.Embedding(spec.vocab_size, h)
        self.pos_emb = nn.Embedding(spec.max_positions, h)
        self.type_emb = nn.Embedding(spec.type_vocab_size, h)
        self.emb_norm = nn.LayerNorm(h, eps=spec.layer_norm_eps)
        self.layers = nn.ModuleList(_Layer(spec) for _ in range(spec.num_layers))
        self.requires_grad_(False)
        self.eval()

    @classmethod
    def from_config(cls, config: Any) -> PackedEncoder:
        """Build from a HF ``BertConfig`` / ``RobertaConfig`` / ``XLMRobertaConfig``."""
        return cls(EncoderSpec.from_hf_config(config))

    # ------------------------------------------------------------------ weights

    def load_hf_state_dict(self, state_dict: dict[str, Tensor]) -> None:
        """Copy weights from a HF ``BertModel``/``RobertaModel``/``XLMRobertaModel`` state dict.

        Any key prefix (``bert.``, ``roberta.``, ``0.auto_model.``, ...) is detected from the word
        embedding key. Pooler / MLM-head / classifier keys are ignored.
        """
        anchor = "embeddings.word_embeddings.weight"
        anchors = sorted(k for k in state_dict if k == anchor or k.endswith("." + anchor))
        if not anchors:
            raise ValueError(f"state dict has no key ending in {anchor!r}")
        prefix = min(anchors, key=len)[: -len(anchor)]

        missing: list[str] = []

        def get(name: str) -> Tensor:
            for key in _aliases(prefix + name):
                if key in state_dict:
                    return state_dict[key]
            missing.append(prefix + name)
            return torch.empty(0)

        def ln(name: str) -> tuple[Tensor, Tensor]:
            return get(f"{name}.LayerNorm.weight"), get(f"{name}.LayerNorm.bias")

        pairs: list[tuple[Tensor, Tensor]] = [
            (self.word_emb.weight, get("embeddings.word_embeddings.weight")),
            (self.pos_emb.weight, get("embeddings.position_embeddings.weight")),
            (self.type_emb.weight, get("embeddings.token_type_embeddings.weight")),
            *zip((self.emb_norm.weight, self.emb_norm.bias), ln("embeddings"), strict=True),
        ]
        for i, layer in enumerate(self.layers):
            assert isinstance(layer, _Layer)
            p = f"encoder.layer.{i}."
            qkv = [get(f"{p}attention.self.{n}.{w}") for w in ("weight", "bias") for n in _QKV]
            pairs += [
                (layer.qkv.weight, _cat(qkv[:3])),  # [3H, H]
                (layer.qkv.bias, _cat(qkv[3:])),  # [3H]
                (layer.attn_out.weight, get(f"{p}attention.output.dense.weight")),
                (layer.attn_out.bias, get(f"{p}attention.output.dense.bias")),
                *zip(
                    (layer.attn_norm.weight, layer.attn_norm.bias),
                    ln(f"{p}attention.output"),
                    strict=True,
                ),
                (layer.ffn_in.weight, get(f"{p}intermediate.dense.weight")),
                (layer.ffn_in.bias, get(f"{p}intermediate.dense.bias")),
                (layer.ffn_out.weight, get(f"{p}output.dense.weight")),
                (layer.ffn_out.bias, get(f"{p}output.dense.bias")),
                *zip((layer.ffn_norm.weight, layer.ffn_norm.bias), ln(f"{p}output"), strict=True),
            ]
        if missing:
            raise ValueError(f"state dict is missing {len(missing)} required keys: {missing}")

        bad = [
            f"{tuple(src.shape)} vs {tuple(dst.shape)}"
            for dst, src in pairs
            if src.shape != dst.shape
        ]
        if bad:
            raise ValueError(f"state dict shapes do not match the config: {bad[:5]}")
        with torch.no_grad():
            for dst, src in pairs:
                dst.copy_(src)

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
        plan = _plan(seq_lens)
        if key_mask_cpu is not None:
            if key_mask_cpu.shape != (t,) or key_mask_cpu.dtype != torch.bool:
                raise ValueError(
                    f"key_mask_cpu must be a host bool [{t}], got {key_mask_cpu.dtype} "
                    f"{tuple(key_mask_cpu.shape)}"
                )
            plan = replace(plan, key_masks=_group_key_masks(plan.groups, key_mask_cpu, device))

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
        low_precision = x.dtype in (torch.float16, torch.bfloat16) or (
            x.is_cuda and torch.is_autocast_enabled("cuda")  # autocast: fp32 residual, bf16 q/k/v
        )
        if _flash_varlen is not None and x.is_cuda and low_precision:
            cu_seqlens = plan.cu_seqlens_cpu.to(device, non_blocking=True)  # [B + 1] int32

        for layer in self.layers:
            x = layer(x, plan, cu_seqlens)
        return x


_QKV = ("query", "key", "value")


def _cat(tensors: list[Tensor]) -> Tensor:
    return torch.cat(tensors) if all(t.numel() for t in tensors) else torch.empty(0)


def _aliases(key: str) -> tuple[str, ...]:
    """Old TF-converted checkpoints name LayerNorm parameters gamma / beta."""
    if key.endswith("LayerNorm.weight"):
        return key, key[: -len("weight")] + "gamma"
    if key.endswith("LayerNorm.bias"):
        return key, key[: -len("bias")] + "beta"
    return (key,)
