"""``encoder``: a bidirectional embedding model (sentence-transformers dense, or a bare
``*Model`` checkpoint): ``embed`` after the Dense chain, ``token_embed`` the hidden states. The
catch-all: every checkpoint no other kind claims is one, so it comes last."""

from __future__ import annotations

from poolq.worker.engine.checkpoints.kinds.embedding import (
    embed_pooling,
    embedding_poolers,
    embedding_tasks,
)
from poolq.worker.engine.checkpoints.kinds.registry import CheckpointKind

ENCODER = CheckpointKind(
    name="encoder",
    recognize=lambda ck: True,
    tasks=embedding_tasks,
    build_poolers=embedding_poolers,
    pooling=embed_pooling,
    st_normalize=True,
)
