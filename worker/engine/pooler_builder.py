"""The pooling layer of a loaded checkpoint: which poolers and heads its kind gets (dense
``embed`` + ``token_embed`` for encoders, ColBERT projections, the SPLADE MLM head, classifier
heads, BGE-M3's three outputs), rebuilt from its weights; all heads in fp32."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from poolq.worker.engine.checkpoint import SentenceTransformersInfo, load_dense_module
from poolq.worker.engine.checkpoint_heads import (
    classifier_from_state,
    linear_from,
    mlm_head_from_state,
)
from poolq.worker.engine.description import ModelConfig, ModelDescription
from poolq.worker.engine.tokenizer import TextTokenizer
from poolq.worker.pooling import (
    AllPool,
    ClassifierHead,
    DispatchPooler,
    EmbeddingHead,
    Pooler,
    SequencePooler,
    SpladePooler,
    TokenEmbedHead,
    TokenPooler,
    multi_output_pooler,
    sequence_method,
)
from poolq.worker.pooling.activations import activation_from_name, classification_activation


def dense_chain(st: SentenceTransformersInfo | None) -> nn.Module | None:
    if st is None or not st.dense:
        return None
    layers: list[nn.Module] = []
    for d in st.dense:
        w = load_dense_module(d)
        layers += [
            linear_from(w["linear.weight"], w.get("linear.bias")),
            activation_from_name(d.activation),
        ]
    return nn.Sequential(*layers)


def build_pooler(
    st: SentenceTransformersInfo | None,
    path: Path,
    config: dict[str, Any],
    desc: ModelDescription,
    cfg: ModelConfig,
    state: dict[str, torch.Tensor],
    tok: TextTokenizer,
) -> DispatchPooler:
    kind = desc.kind
    special = sorted(tok.special_token_ids)
    skip = special if cfg.token_embed_skip_special else []
    poolers: dict[str, Pooler] = {}
    if kind in ("encoder", "decoder"):
        assert desc.pooling is not None
        head = EmbeddingHead(
            desc.output_dim("embed"),
            dense_chain(st),
            normalize=desc.normalize,
            is_matryoshka=desc.is_matryoshka,
            matryoshka_dims=desc.matryoshka_dims,
        )
        poolers["embed"] = SequencePooler(sequence_method(desc.pooling), head)
        poolers["token_embed"] = TokenPooler(
            AllPool(), TokenEmbedHead(desc.hidden_size, skip_token_ids=skip)
        )
    elif kind == "colbert":
        if "linear.weight" in state:
            proj: nn.Module | None = linear_from(state["linear.weight"], state.get("linear.bias"))
        else:
            proj = dense_chain(st)
        head_t = TokenEmbedHead(desc.output_dim("token_embed"), proj, skip_token_ids=skip)
        poolers["token_embed"] = TokenPooler(AllPool(), head_t)
    elif kind == "masked_lm":
        mlm = mlm_head_from_state(state, config)
        remove = [
            t
            for t in (
                tok.token_id("[CLS]"),
                tok.token_id("[SEP]"),
                tok.token_id("<s>"),
                tok.token_id("</s>"),
            )
            if t is not None
        ]
        poolers["sparse"] = SpladePooler(
            mlm,
            desc.vocab_size,
            mode=cfg.splade_mode,
            remove_token_ids=remove if cfg.splade_remove_special else (),
        )
    elif kind == "classifier":
        num_labels = desc.output_dim("classify")
        act_name = (st.activation_fn if st else None) or (
            config.get("sentence_transformers") or {}
        ).get("activation_fn")
        act = (
            activation_from_name(act_name)
            if act_name
            else classification_activation(config.get("problem_type"), num_labels)
        )
        head_c = ClassifierHead(classifier_from_state(state, config), act, num_labels=num_labels)
        poolers["classify"] = SequencePooler(sequence_method("CLS"), head_c)
    elif kind == "bge_m3":

        def load_linear(name: str) -> nn.Linear | None:
            f = path / name
            if not f.is_file():
                return None
            w = torch.load(f, map_location="cpu", weights_only=True)
            return linear_from(w["weight"], w.get("bias"))

        return multi_output_pooler(
            hidden_size=desc.hidden_size,
            vocab_size=desc.vocab_size,
            special_token_ids=special,
            sparse_linear=load_linear("sparse_linear.pt"),
            colbert_linear=load_linear("colbert_linear.pt"),
        )
    return DispatchPooler(poolers)
