"""BERT, RoBERTa, XLM-RoBERTa (and CamemBERT's config): post-LayerNorm bidirectional encoders with
absolute position embeddings, run by ``packed_encoder.py``; their MLM heads (SPLADE) and
sequence-classification heads (rerankers) by checkpoint layout."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from poolq.worker.engine.models.registry import Architecture, Config, State, max_positions


def padded_form(packed: nn.Module) -> nn.Module:
    """The padded SDPA form over the packed encoder's own modules (OpenVINO converts it)."""
    from poolq.worker.engine.models.padded_encoder import PaddedEncoderForm

    return PaddedEncoderForm(packed)


MODEL_TYPES = ("bert", "roberta", "xlm-roberta")
_BERT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
    "is_decoder": False,
    "position_embedding_type": "absolute",
}
CONFIG_DEFAULTS: dict[str, dict[str, Any]] = {
    "bert": _BERT_DEFAULTS,
    "roberta": {**_BERT_DEFAULTS, "vocab_size": 50265, "pad_token_id": 1},
    "xlm-roberta": {**_BERT_DEFAULTS, "pad_token_id": 1},
}


def position_offset(model_type: str, pad_token_id: int) -> int:
    """First position id: 0 for BERT, ``padding_idx + 1`` for RoBERTa / XLM-R."""
    return 0 if model_type == "bert" else int(pad_token_id) + 1


def _positions(config: Config) -> int:
    model_type = str(config.get("model_type", ""))
    pad = int(
        config.get("pad_token_id", CONFIG_DEFAULTS.get(model_type, {}).get("pad_token_id", 0))
    )
    return max_positions(config) - position_offset(model_type, pad)


def _build(config: Config, state: dict[str, Tensor]) -> nn.Module:
    from poolq.worker.engine.models.encoder_spec import EncoderSpec
    from poolq.worker.engine.models.packed_encoder import PackedEncoder

    return PackedEncoder.from_state_dict(EncoderSpec.from_dict(dict(config)), state)


def _mlm_head(config: Config, state: State) -> nn.Module:
    from poolq.worker.engine.checkpoints.checkpoint_heads import (
        MLMHead,
        layer_norm_from,
        linear_from,
        take,
    )

    model_type = str(config.get("model_type"))
    eps = float(config.get("layer_norm_eps", 1e-12))
    if model_type == "bert":
        p = "cls.predictions."
        dense = linear_from(state[p + "transform.dense.weight"], state[p + "transform.dense.bias"])
        norm = layer_norm_from(
            state[p + "transform.LayerNorm.weight"], state[p + "transform.LayerNorm.bias"], eps
        )
        dec_w = take(
            state,
            p + "decoder.weight",
            "bert.embeddings.word_embeddings.weight",
            "embeddings.word_embeddings.weight",
        )
        act = str(config.get("hidden_act", "gelu"))
    else:  # roberta, xlm-roberta: RobertaLMHead, always GELU
        p = "lm_head."
        dense = linear_from(state[p + "dense.weight"], state[p + "dense.bias"])
        norm = layer_norm_from(state[p + "layer_norm.weight"], state[p + "layer_norm.bias"], eps)
        dec_w = take(state, p + "decoder.weight", "roberta.embeddings.word_embeddings.weight")
        act = "gelu"
    dec_b = take(state, p + "bias", p + "decoder.bias")
    return MLMHead(dense, act, norm, linear_from(dec_w, dec_b))


def _classifier(config: Config, state: State) -> nn.Module:
    """The layers between the CLS row and the logits."""
    from poolq.worker.engine.checkpoints.checkpoint_heads import linear_from

    if config.get("model_type") == "bert":
        # BertForSequenceClassification: pooler (dense + tanh) -> classifier
        pooler = linear_from(state["bert.pooler.dense.weight"], state["bert.pooler.dense.bias"])
        out = linear_from(state["classifier.weight"], state["classifier.bias"])
        return nn.Sequential(pooler, nn.Tanh(), out)
    # RobertaClassificationHead: dense -> tanh -> out_proj
    dense = linear_from(state["classifier.dense.weight"], state["classifier.dense.bias"])
    out = linear_from(state["classifier.out_proj.weight"], state["classifier.out_proj.bias"])
    return nn.Sequential(dense, nn.Tanh(), out)


BERT = Architecture(
    family="bert",
    model_types=MODEL_TYPES,
    attention="bidirectional",
    default_pooling="CLS",
    kinds=frozenset({"encoder", "masked_lm", "classifier", "colbert", "bge_m3"}),
    build_encoder=_build,
    positions=_positions,
    mlm_head=_mlm_head,
    padded_form=padded_form,
    classifier=_classifier,
    config_defaults=CONFIG_DEFAULTS,
)
