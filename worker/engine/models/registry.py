"""What the engine knows of one architecture family, as one frozen entry (vLLM's model registry):
the ``model_type`` values it covers, its attention, its default pooling, the checkpoint kinds it
runs natively, and how to build its packed module and heads. Adding an architecture: see
``worker/engine/README.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from torch import Tensor, nn

# bidirectional: every token sees its whole sequence (BERT); causal: token i sees tokens <= i
# of its own sequence (decoders: chunked prefill is possible); local_global: bidirectional, some
# layers within a sliding window (ModernBERT)
AttentionKind = Literal["bidirectional", "causal", "local_global"]
PoolingName = Literal["CLS", "MEAN", "LAST"]
Config = Mapping[str, Any]  # a checkpoint's config.json
State = Mapping[str, Tensor]  # its weights, by checkpoint name


@dataclass(frozen=True)
class Architecture:
    family: str
    model_types: tuple[str, ...]
    attention: AttentionKind
    default_pooling: PoolingName
    # checkpoint kinds run natively ("encoder", "masked_lm", "classifier", ...); any other kind of
    # this family goes to the padded transformers fallback
    kinds: frozenset[str]
    # config + weights -> the packed module: (input_ids [T], seq_lens, **kw) -> hidden [T, H]
    build_encoder: Callable[[Config, dict[str, Tensor]], nn.Module]
    # usable positions of a sequence (RoBERTa's start after the padding index)
    positions: Callable[[Config], int]
    # heads that ``*ForMaskedLM`` / ``*ForSequenceClassification`` checkpoints carry
    mlm_head: Callable[[Config, State], nn.Module] | None = None
    classifier: Callable[[Config, State], nn.Module] | None = None
    # the built packed module -> its padded SDPA form, ``(input_ids [B, L], attention_mask
    # [B, L]) -> hidden [B, L, H]``, over the same weights: what graph backends (OpenVINO)
    # convert; None: the family runs on torch only
    padded_form: Callable[[nn.Module], nn.Module] | None = None
    # keys a config.json may omit, per model_type (transformers' defaults)
    config_defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def causal(self) -> bool:
        """Chunked prefill applies: a sequence can be split across batches."""
        return self.attention == "causal"

    def with_defaults(self, config: Config) -> dict[str, Any]:
        return {**self.config_defaults.get(str(config.get("model_type")), {}), **config}


def max_positions(config: Config) -> int:
    return int(config.get("max_position_embeddings", 512))
