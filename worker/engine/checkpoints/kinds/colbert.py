"""``colbert``: a late-interaction checkpoint, colbert-ir's ``HF_ColBERT`` (a ``linear.weight``
projection beside the backbone) or a PyLate sentence-transformers folder (a Dense projector):
``token_embed`` only, projected per token, with query and document forms
(``colbert_forms.py``). PyLate rewrites ``max_seq_length`` per call: it is no model limit."""

from __future__ import annotations

from torch import nn

from poolq.worker.engine.checkpoints.checkpoint_heads import linear_from
from poolq.worker.engine.checkpoints.colbert_forms import colbert_ir_forms, pylate_forms
from poolq.worker.engine.checkpoints.input_forms import InputForms
from poolq.worker.engine.checkpoints.kinds.embedding import dense_chain
from poolq.worker.engine.checkpoints.kinds.inputs import Checkpoint, PoolerInputs
from poolq.worker.engine.checkpoints.kinds.registry import CheckpointKind
from poolq.worker.engine.execution.tokenizer import TextTokenizer
from poolq.worker.pooling import AllPool, DispatchPooler, TokenEmbedHead, TokenPooler
from poolq.worker.pooling.tasks import PoolingTask

PROJECTION = "linear.weight"  # colbert-ir's projection, a tensor of the main weights


def _recognize(ck: Checkpoint) -> bool:
    if ck.architecture == "HF_ColBERT" or PROJECTION in ck.shapes:
        return True
    return ck.st is not None and any("pylate" in t.lower() for t in ck.st.module_types)


def _tasks(ck: Checkpoint) -> dict[PoolingTask, int]:
    if PROJECTION in ck.shapes:
        return {"token_embed": ck.shapes[PROJECTION][0]}
    return {"token_embed": ck.embed_dim}


def _poolers(p: PoolerInputs) -> DispatchPooler:
    if PROJECTION in p.state:
        proj: nn.Module | None = linear_from(p.state[PROJECTION], p.state.get("linear.bias"))
    else:
        proj = dense_chain(p.st)
    head = TokenEmbedHead(p.desc.output_dim("token_embed"), proj, skip_token_ids=p.token_embed_skip)
    return DispatchPooler({"token_embed": TokenPooler(AllPool(), head)})


def _forms(ck: Checkpoint, tok: TextTokenizer, max_length: int) -> InputForms:
    read = colbert_ir_forms if PROJECTION in ck.shapes else pylate_forms  # HF_ColBERT, PyLate
    return read(ck.path, tok, max_length)


COLBERT = CheckpointKind(
    name="colbert",
    recognize=_recognize,
    tasks=_tasks,
    build_poolers=_poolers,
    st_max_length=False,
    head_weights=True,
    input_forms=_forms,
)
