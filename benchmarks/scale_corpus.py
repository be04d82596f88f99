"""Synthetic points of the default profile's shapes for ``bench_store_scale.py``: dense 384
(unit), sparse ~120 non-zeros over 30,522 (SPLADE's vocabulary), a multi-vector of 16-80 tokens
(mean 48) x 384, and the payload ingest writes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np

from poolq.sinks.points import PointRecord, SparseValues, point_id
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.wire.payload import build_payload

DIM, VOCAB, NNZ = 384, 30522, 120
SCHEMA = CollectionSchema(
    "bench",
    (
        VectorSpec("dense", "dense", DIM, "bundled:all-minilm-l6-v2"),
        VectorSpec("colbert", "multi", DIM, "bundled:all-minilm-l6-v2"),
        VectorSpec("sparse", "sparse", None, "bundled:splade-tiny"),
    ),
)
CHUNKS_PER_DOC = 3


# -- synthetic points --------------------------------------------------------------------------


class Corpus:
    """Deterministic points; multi-vectors are views into a pool (they are only stored and
    reranked, never indexed, so repeats cost nothing in realism but keep this process small)."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        pool = self.rng.standard_normal((512, 80, DIM)).astype(np.float32)
        self.pool = pool / np.linalg.norm(pool, axis=-1, keepdims=True)

    def points(self, start: int, n: int) -> tuple[list[PointRecord], dict[str, int]]:
        rng = self.rng
        dense = rng.standard_normal((n, DIM)).astype(np.float32)
        dense /= np.linalg.norm(dense, axis=1, keepdims=True)
        out, replace = [], {}
        for k in range(n):
            i = start + k
            doc_id, chunk = f"doc-{i // CHUNKS_PER_DOC}", i % CHUNKS_PER_DOC
            tokens = int(rng.integers(16, 81))
            idx = np.sort(rng.choice(VOCAB, NNZ, replace=False)).tolist()
            offset = int(rng.integers(0, 81 - tokens))  # a slice of its own: no two points tie
            vectors = {
                "dense": dense[k],
                "colbert": self.pool[i % len(self.pool), offset : offset + tokens],
                "sparse": SparseValues(idx, rng.random(NNZ).astype(np.float32).tolist()),
            }
            text = f"synthetic chunk {i} " + "lorem ipsum " * (tokens // 2)
            payload = build_payload(
                doc_id=doc_id, chunk_index=chunk, chunk_count=CHUNKS_PER_DOC, text=text,
                char_start=0, char_end=len(text), chunk_hash=f"{i:016x}", doc_hash="d" * 16,
                meta_hash="m" * 16, metadata={"n": i, "lang": ["en", "de"][i % 2]},
                models={v.name: v.model_id for v in SCHEMA.vectors}, profile_version="bench",
                ingested_at=datetime.now(UTC).isoformat(),
            )  # fmt: skip
            out.append(PointRecord(point_id(doc_id, chunk), vectors, payload))
            replace[doc_id] = CHUNKS_PER_DOC
        return out, replace

    def query(self) -> dict[str, Any]:
        rng = self.rng
        q = rng.standard_normal((12, DIM)).astype(np.float32)
        idx = np.sort(rng.choice(VOCAB, 20, replace=False)).tolist()
        return {
            "dense": rng.standard_normal(DIM).astype(np.float32),
            "colbert": q,
            "sparse": SparseValues(idx, rng.random(20).tolist()),
        }
