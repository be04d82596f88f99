"""Pooling tasks: what a request asks the pooler to produce.

| task          | granularity | output                                   |
|---------------|-------------|------------------------------------------|
| ``embed``       | sequence    | dense ``float32[d]``                      |
| ``sparse``      | sequence    | :class:`SparseEmbedding` (SPLADE weights) |
| ``token_embed`` | token       | multi-vector ``float32[n_tokens, d]``     |
| ``classify``    | sequence    | class scores ``float32[num_labels]``      |
| ``score``       | pair        | one relevance score, a ``float32`` scalar |

``score`` reads a (query, text) pair (``AsyncEngine.score``): a cross-encoder's one label, or an
LLM reranker's "yes" against "no".
"""

from __future__ import annotations

from typing import Final, Literal, TypeGuard, get_args

PoolingTask = Literal["embed", "sparse", "token_embed", "classify", "score"]

POOLING_TASKS: Final[tuple[PoolingTask, ...]] = get_args(PoolingTask)

# Names older APIs used, with the task that replaces them.
_RENAMED: Final[dict[str, str]] = {
    "encode": "'embed' for one vector per text, or 'token_embed' for one vector per token",
    "reward": "'classify'",
    "token_classify": "'sparse' for lexical weights",
    "embedding": "'embed'",
}


def is_pooling_task(name: object) -> TypeGuard[PoolingTask]:
    return isinstance(name, str) and name in POOLING_TASKS


def parse_task(
    name: object, *, supported: tuple[str, ...] | frozenset[str] | None = None
) -> PoolingTask:
    """Return ``name`` as a task, or raise ``ValueError`` naming the allowed ones."""
    allowed = tuple(sorted(supported)) if supported is not None else POOLING_TASKS
    if is_pooling_task(name) and name in allowed:
        return name
    hint = f" (use {_RENAMED[name]})" if isinstance(name, str) and name in _RENAMED else ""
    if is_pooling_task(name):
        raise ValueError(
            f"task {name!r} is not supported by this model; supported tasks: {', '.join(allowed)}"
        )
    raise ValueError(f"unknown task {name!r}{hint}; supported tasks: {', '.join(allowed)}")
