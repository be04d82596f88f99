"""Collection parameters for Qdrant Edge: qdrant-client's ``VectorParams`` and
``SparseVectorParams`` (as ``sinks/collection_config.py`` builds them for every backend) as an
``EdgeConfig``, and a shard's persisted ``edge_config.json`` back as ``CollectionParams``.

Covered: dense and multi-vectors (MaxSim), sparse vectors, distance, datatype, on disk, HNSW
(``m = 0`` included), scalar int8 quantization, deferred indexing. Anything else is refused with
an error naming it.
"""

from __future__ import annotations

from typing import Any

import qdrant_edge as qe
from qdrant_client import models

from poolq.sinks.store.errors import EdgeError

# Qdrant's HNSW defaults, built on one thread: Edge runs inside the worker, whose other cores
# encode (and whose writes hold the GIL while an index builds in the background)
INDEX_THREADS = 1

_DISTANCES = {
    models.Distance.COSINE: qe.Distance.Cosine,
    models.Distance.EUCLID: qe.Distance.Euclid,
    models.Distance.DOT: qe.Distance.Dot,
    models.Distance.MANHATTAN: qe.Distance.Manhattan,
}
_DATATYPES = {
    models.Datatype.FLOAT32: qe.VectorStorageDatatype.Float32,
    models.Datatype.FLOAT16: qe.VectorStorageDatatype.Float16,
    models.Datatype.UINT8: qe.VectorStorageDatatype.Uint8,
}


def edge_config(
    vectors: dict[str, models.VectorParams],
    sparse: dict[str, models.SparseVectorParams],
    *,
    defer_indexing: bool = False,
    wal: bool = True,
) -> qe.EdgeConfig:
    """The shard config of a collection's parameters; ``defer_indexing`` turns indexing off
    (``indexing_threshold = 0``) until the shard is loaded again without it. The WAL is on
    (``wal_enabled=None``): an acknowledged update survives the process; ``wal=False`` only for
    a bulk load that nothing names yet (``EdgeStore.create_for_import``)."""
    return qe.EdgeConfig(
        vectors={name: _vector_params(name, p) for name, p in vectors.items()},
        hnsw_config=qe.HnswIndexConfig(
            m=16, ef_construct=100, full_scan_threshold=10000, max_indexing_threads=INDEX_THREADS
        ),
        sparse_vectors={name: _sparse_params(p) for name, p in sparse.items()},
        # given whole, so that loading with it also turns deferred indexing back on
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=0 if defer_indexing else None),
        wal_enabled=None if wal else False,
    )


def _vector_params(name: str, p: models.VectorParams) -> qe.EdgeVectorParams:
    if p.distance not in _DISTANCES:
        raise EdgeError(f"vector {name!r}: distance {p.distance!r} has no Edge equivalent")
    multi = None
    if p.multivector_config is not None:
        multi = qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim)
    hnsw = None
    if p.hnsw_config is not None:
        h = p.hnsw_config
        hnsw = qe.HnswIndexConfig(
            m=16 if h.m is None else h.m,
            ef_construct=h.ef_construct or 100,
            full_scan_threshold=h.full_scan_threshold or 10000,
            on_disk=h.on_disk,
        )
    return qe.EdgeVectorParams(
        size=p.size,
        distance=_DISTANCES[p.distance],
        on_disk=p.on_disk,
        multivector_config=multi,
        datatype=None if p.datatype is None else _DATATYPES[p.datatype],
        quantization_config=_quantization(name, p.quantization_config),
        hnsw_config=hnsw,
    )


def _quantization(name: str, q: Any) -> qe.ScalarQuantizationConfig | None:
    if q is None:
        return None
    if isinstance(q, models.ScalarQuantization) and q.scalar.type == models.ScalarType.INT8:
        s = q.scalar
        return qe.ScalarQuantizationConfig(
            qe.ScalarType.Int8, quantile=s.quantile, always_ram=s.always_ram
        )
    raise EdgeError(f"vector {name!r}: quantization {type(q).__name__} is not translated")


def _sparse_params(p: models.SparseVectorParams) -> qe.EdgeSparseVectorParams:
    modifier = qe.Modifier.Idf if p.modifier == models.Modifier.IDF else None
    return qe.EdgeSparseVectorParams(modifier=modifier)


def params_from_config_json(data: dict[str, Any]) -> models.CollectionParams:
    """A shard's persisted ``edge_config.json`` (the REST shape) as qdrant-client parameters."""
    vectors = {
        name: models.VectorParams.model_validate(_known(v, models.VectorParams))
        for name, v in (data.get("vectors") or {}).items()
    }
    sparse = {
        name: models.SparseVectorParams.model_validate(_known(v, models.SparseVectorParams))
        for name, v in (data.get("sparse_vectors") or {}).items()
    }
    return models.CollectionParams.model_construct(vectors=vectors, sparse_vectors=sparse)


def _known(d: dict[str, Any], model: type[Any]) -> dict[str, Any]:
    """``d`` without keys ``model`` does not know (newer Edge versions may add some)."""
    out = {k: v for k, v in d.items() if k in model.model_fields}
    if isinstance(out.get("hnsw_config"), dict):
        out["hnsw_config"] = _known(out["hnsw_config"], models.HnswConfigDiff)
    return out
