"""DistilBERT (SPLADE-v3-DistilBERT, OpenSearch neural-sparse doc-v2/v3-distill): a post-LayerNorm
bidirectional encoder like BERT without token types or a pooler. Its weights are renamed to
BERT's layout and run by ``packed_encoder.py`` (a zero token-type row); its MLM head is
``vocab_projector(LayerNorm(act(vocab_transform(h))))``, its sequence-classification head
``classifier(ReLU(pre_classifier(CLS)))``."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from poolq.worker.engine.models.bert import padded_form
from poolq.worker.engine.models.registry import Architecture, Config, State, max_positions

_DEFAULTS: dict[str, Any] = {
    "vocab_size": 30522,
    "max_position_embeddings": 512,
    "n_layers": 6,
    "n_heads": 12,
    "dim": 768,
    "hidden_dim": 3072,
    "activation": "gelu",
    "pad_token_id": 0,
}
_EPS = 1e-12  # DistilBERT's LayerNorms (not configurable)
# DistilBERT layer names -> BERT's, within ``transformer.layer.{i}.`` -> ``encoder.layer.{i}.``
_LAYER_NAMES = {
    "attention.q_lin.": "attention.self.query.",
    "attention.k_lin.": "attention.self.key.",
    "attention.v_lin.": "attention.self.value.",
    "attention.out_lin.": "attention.output.dense.",
    "sa_layer_norm.": "attention.output.LayerNorm.",
    "ffn.lin1.": "intermediate.dense.",
    "ffn.lin2.": "output.dense.",
    "output_layer_norm.": "output.LayerNorm.",
}


def _bert_state(state: dict[str, Tensor]) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {}
    for key, value in state.items():
        head, sep, tail = key.partition("transformer.layer.")
        if sep:
            index, _, name = tail.partition(".")
            for old, new in _LAYER_NAMES.items():
                if name.startswith(old):
                    name = new + name[len(old) :]
                    break
            key = f"{head}encoder.layer.{index}.{name}"
        out[key] = value
        if key.endswith("embeddings.word_embeddings.weight"):  # no token types: one zero row
            prefix = key[: -len("word_embeddings.weight")]
            out[prefix + "token_type_embeddings.weight"] = value.new_zeros(1, value.shape[1])
    return out


def _spec(config: Config) -> Any:
    from poolq.worker.engine.models.encoder_spec import EncoderSpec
    from poolq.worker.engine.models.hidden_act import is_known

    c = {**_DEFAULTS, **config}
    if not is_known(c["activation"]):
        raise ValueError(f"distilbert: unsupported activation {c['activation']!r}")
    dim, heads = int(c["dim"]), int(c["n_heads"])
    if dim % heads:
        raise ValueError(f"distilbert: dim {dim} is not a multiple of n_heads {heads}")
    return EncoderSpec(
        model_type="distilbert",
        vocab_size=int(c["vocab_size"]),
        hidden_size=dim,
        num_layers=int(c["n_layers"]),
        num_heads=heads,
        intermediate_size=int(c["hidden_dim"]),
        max_positions=int(c["max_position_embeddings"]),
        type_vocab_size=1,
        layer_norm_eps=_EPS,
        hidden_act=str(c["activation"]),
        position_offset=0,
    )


def _build(config: Config, state: dict[str, Tensor]) -> nn.Module:
    from poolq.worker.engine.models.packed_encoder import PackedEncoder

    return PackedEncoder.from_state_dict(_spec(config), _bert_state(state))


def _mlm_head(config: Config, state: State) -> nn.Module:
    from poolq.worker.engine.checkpoints.checkpoint_heads import (
        MLMHead,
        layer_norm_from,
        linear_from,
        take,
    )

    dense = linear_from(state["vocab_transform.weight"], state["vocab_transform.bias"])
    norm = layer_norm_from(state["vocab_layer_norm.weight"], state["vocab_layer_norm.bias"], _EPS)
    dec_w = take(  # tied to the word embeddings: often not saved
        state, "vocab_projector.weight", "distilbert.embeddings.word_embeddings.weight"
    )
    dec = linear_from(dec_w, take(state, "vocab_projector.bias"))
    return MLMHead(dense, str(config.get("activation", "gelu")), norm, dec)


def _classifier(config: Config, state: State) -> nn.Module:
    """DistilBertForSequenceClassification: pre_classifier -> ReLU -> classifier."""
    from poolq.worker.engine.checkpoints.checkpoint_heads import linear_from

    pre = linear_from(state["pre_classifier.weight"], state["pre_classifier.bias"])
    out = linear_from(state["classifier.weight"], state["classifier.bias"])
    return nn.Sequential(pre, nn.ReLU(), out)


DISTILBERT = Architecture(
    family="distilbert",
    model_types=("distilbert",),
    attention="bidirectional",
    default_pooling="CLS",
    kinds=frozenset({"encoder", "masked_lm", "classifier"}),
    build_encoder=_build,
    positions=max_positions,
    mlm_head=_mlm_head,
    classifier=_classifier,
    padded_form=padded_form,
    config_defaults={"distilbert": _DEFAULTS},
)
