"""What the packed encoder needs to know of a checkpoint's config, read from a HF config object
or straight from ``config.json`` (omitted keys: transformers' defaults, in ``models/bert.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from poolq.worker.engine.models.bert import CONFIG_DEFAULTS, position_offset
from poolq.worker.engine.models.bert import MODEL_TYPES as SUPPORTED_MODEL_TYPES
from poolq.worker.engine.models.hidden_act import is_known


@dataclass(frozen=True)
class EncoderSpec:
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
        if not is_known(config.hidden_act):
            raise ValueError(f"unsupported hidden_act {config.hidden_act!r}")
        if config.hidden_size % config.num_attention_heads != 0:
            raise ValueError(
                f"hidden_size {config.hidden_size} is not a multiple of "
                f"num_attention_heads {config.num_attention_heads}"
            )
        offset = position_offset(model_type, config.pad_token_id)
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

    @classmethod
    def from_dict(cls, config: dict[str, Any]) -> EncoderSpec:
        """From a ``config.json`` mapping, missing keys taking transformers' defaults."""
        defaults = CONFIG_DEFAULTS.get(str(config.get("model_type")), {})
        return cls.from_hf_config(SimpleNamespace(**{**defaults, **config}))
