"""What the embedding kinds share (encoder, decoder; BGE-M3's pooling choice, ColBERT's Dense
projector): the ``embed`` method under the user's choices, the sentence-transformers Dense chain
as one module, and the ``embed`` + ``token_embed`` tasks with their poolers.

Precedence for the method: explicit ``ModelConfig.pooling`` > the sentence-transformers Pooling
module > the architecture family's default > the kind's own default (no family entry)."""

from __future__ import annotations

from torch import nn

from poolq.worker.engine.checkpoints.checkpoint import SentenceTransformersInfo, load_dense_module
from poolq.worker.engine.checkpoints.checkpoint_heads import linear_from
from poolq.worker.engine.checkpoints.description import ModelConfig
from poolq.worker.engine.checkpoints.kinds.inputs import Checkpoint, PoolerInputs
from poolq.worker.engine.models import PoolingName, architecture_for
from poolq.worker.pooling import (
    AllPool,
    DispatchPooler,
    EmbeddingHead,
    SequencePooler,
    TokenEmbedHead,
    TokenPooler,
    sequence_method,
)
from poolq.worker.pooling.activations import activation_from_name
from poolq.worker.pooling.tasks import PoolingTask

ST_POOLING = {"cls": "CLS", "mean": "MEAN", "lasttoken": "LAST"}


def embed_pooling(
    ck: Checkpoint, cfg: ModelConfig, *, read_st: bool = True, default: PoolingName = "CLS"
) -> str:
    """``read_st``: whether the sentence-transformers Pooling module counts; ``default``: the
    method when the model type has no family entry."""
    if cfg.pooling is not None:
        return cfg.pooling
    st_pooling = ck.st.pooling_mode if ck.st else None
    if read_st and st_pooling is not None:
        if st_pooling not in ST_POOLING:
            raise ValueError(
                f"model {ck.model_id!r}: sentence-transformers pooling mode {st_pooling!r} is not supported; "
                f"supported: {sorted(ST_POOLING)} (override with pooling=CLS|MEAN|LAST)"
            )
        return ST_POOLING[st_pooling]
    arch = architecture_for(str(ck.config.get("model_type", "")))
    return arch.default_pooling if arch is not None else default


def dense_chain(st: SentenceTransformersInfo | None) -> nn.Module | None:
    """The sentence-transformers Dense modules, each ``activation(Linear)``, as one module."""
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


def embedding_tasks(ck: Checkpoint) -> dict[PoolingTask, int]:
    """``embed`` (after the Dense chain) and ``token_embed`` (the hidden states)."""
    return {"embed": ck.embed_dim, "token_embed": ck.hidden_size}


def embedding_poolers(p: PoolerInputs) -> DispatchPooler:
    desc = p.desc
    assert desc.pooling is not None
    head = EmbeddingHead(
        desc.output_dim("embed"),
        dense_chain(p.st),
        normalize=desc.normalize,
        is_matryoshka=desc.is_matryoshka,
        matryoshka_dims=desc.matryoshka_dims,
    )
    return DispatchPooler(
        {
            "embed": SequencePooler(sequence_method(desc.pooling), head),
            "token_embed": TokenPooler(
                AllPool(), TokenEmbedHead(desc.hidden_size, skip_token_ids=p.token_embed_skip)
            ),
        }
    )
