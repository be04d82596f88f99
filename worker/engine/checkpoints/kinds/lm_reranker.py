"""``lm_reranker``: a causal LM that scores a (query, document) pair in the Qwen3-Reranker form:
the model card's prompt (``pair_forms.PromptPairs``), then at the last token the probability of
"yes" against "no", ``sigmoid(logit_yes - logit_no)``. Only the two tokens' rows of the LM head
are kept and evaluated (``pooling.TokenOdds``), never the whole vocabulary; the backbone is the
family's packed decoder.

The checkpoint's files say it is one (as vLLM's ``classifier_from_token`` does): a
``classifier_from_token`` list in ``config.json`` (the [false, true] tokens, ``["no", "yes"]``),
or a causal LM whose model card (``README.md``) says ``pipeline_tag: text-ranking``, as
Qwen3-Reranker's does. A folder that says neither is named by the user: the model option
``classifier_from_token = ["no", "yes"]`` (the loader writes it into the config it reads).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import nn

from poolq.worker.engine.checkpoints.description import token_pair
from poolq.worker.engine.checkpoints.kinds.decoder import is_causal
from poolq.worker.engine.checkpoints.kinds.inputs import Checkpoint, PoolerInputs
from poolq.worker.engine.checkpoints.kinds.registry import CheckpointKind
from poolq.worker.engine.checkpoints.pair_forms import PromptPairs
from poolq.worker.engine.models.state_reader import key_prefix
from poolq.worker.pooling import (
    DispatchPooler,
    ScoreHead,
    SequencePooler,
    TokenOdds,
    sequence_method,
)

DEFAULT_TOKENS = ("no", "yes")  # Qwen3-Reranker's [false, true]
RANKING_TAG = "text-ranking"


def score_tokens(
    config: Mapping[str, Any], pipeline_tag: str | None = None
) -> tuple[str, str] | None:
    """The [false, true] tokens a checkpoint's files name (None: not an LLM reranker)."""
    tokens = config.get("classifier_from_token")
    if tokens is not None:
        return token_pair(tokens)
    return DEFAULT_TOKENS if pipeline_tag == RANKING_TAG else None


def _recognize(ck: Checkpoint) -> bool:
    if ck.architecture.endswith("ForSequenceClassification") or not is_causal(ck.config):
        return False
    return score_tokens(ck.config, ck.pipeline_tag) is not None


def token_rows(p: PoolerInputs) -> nn.Module:
    """The LM head's rows of the false and true tokens (the tied embeddings when the checkpoint
    saves no ``lm_head``)."""
    tokens = score_tokens(p.config, RANKING_TAG)  # recognised: the files name them or the tag
    assert tokens is not None
    ids = []
    for token in tokens:
        found = p.tok.token_id(token)
        if found is None:
            raise ValueError(
                f"model {p.desc.model_id!r}: its tokenizer has no token {token!r} "
                f"(classifier_from_token {list(tokens)})"
            )
        ids.append(found)
    state = p.state
    weight = state.get("lm_head.weight")
    if weight is None:
        weight = state.get(key_prefix(state, "embed_tokens.weight") + "embed_tokens.weight")
    assert weight is not None  # key_prefix raised where there is none
    return TokenOdds(weight[ids].float())


def _poolers(p: PoolerInputs) -> DispatchPooler:
    head = ScoreHead(token_rows(p), nn.Sigmoid())
    return DispatchPooler({"score": SequencePooler(sequence_method("LAST"), head)})


LM_RERANKER = CheckpointKind(
    name="lm_reranker",
    recognize=_recognize,
    tasks=lambda ck: {"score": 1},
    build_poolers=_poolers,
    head_weights=True,
    pair_form=lambda ck, tok, length, cfg: PromptPairs.qwen3_reranker(
        tok, length, cfg.score_instruction
    ),
)
