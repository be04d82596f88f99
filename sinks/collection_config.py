"""A schema as Qdrant collection parameters (qdrant-client models), built once for both
backends: a server gets them as they are, Qdrant Edge through its adapter
(``sinks/store/edge_convert.py``).

The vectors, by kind:

* dense: cosine; scalar int8 quantization (kept in RAM) and on-disk originals if the settings
  say so;
* multi: cosine MaxSim (uint8: Euclid over the codes, same ranking), HNSW off (``m = 0``: a multi-vector only reranks candidates), on disk,
  float32, float16 or uint8;
* sparse: no modifier (SPLADE weights are used as they are).
"""

from __future__ import annotations

from typing import Any

from qdrant_client import models

from poolq.sinks.collection_settings import SERVER_INTS, CollectionSettings
from poolq.sinks.schema import CollectionSchema, VectorSpec
from poolq.wire import payload as fields

DISTANCE = models.Distance.COSINE
# uint8 multi-vectors: Euclid over offset codes is exactly affine in the cosine of unit vectors
# (the offset cancels in a difference), so MaxSim's ranking survives; cosine over the codes
# does not (sinks/store/uint8_codec.py)
UINT8_MULTI_DISTANCE = models.Distance.EUCLID
MAXSIM = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)
NO_HNSW = models.HnswConfigDiff(m=0)
INT8 = models.ScalarQuantization(
    scalar=models.ScalarQuantizationConfig(
        type=models.ScalarType.INT8, quantile=0.99, always_ram=True
    )
)
# float32 is Qdrant's default (None); uint8 vectors are coded by the store (store/uint8_codec.py)
MULTI_DATATYPES: dict[str, models.Datatype | None] = {
    "float32": None,
    "float16": models.Datatype.FLOAT16,
    "uint8": models.Datatype.UINT8,
}
# payload fields every point carries, indexed for the filters the sink uses (stale chunks,
# deletions by document, the reindex inventory's chunk-0 scan) and for the citation fields
# people filter by (``source=manuals/x.pdf``, ``mime=application/pdf``, ``page_start>=10``)
PAYLOAD_INDEXES: dict[str, models.PayloadSchemaType] = {
    fields.DOC_ID: models.PayloadSchemaType.KEYWORD,
    fields.CHUNK_INDEX: models.PayloadSchemaType.INTEGER,
    fields.SOURCE: models.PayloadSchemaType.KEYWORD,
    fields.MIME: models.PayloadSchemaType.KEYWORD,
    fields.PAGE_START: models.PayloadSchemaType.INTEGER,
}
# a full rebuild loads with indexing off, then restores it (see Store.finish_build)
DEFERRED_INDEXING = models.OptimizersConfigDiff(indexing_threshold=0)


def vector_params(spec: VectorSpec, settings: CollectionSettings) -> models.VectorParams:
    """Qdrant parameters of a dense or multi-vector spec under ``settings``."""
    assert spec.size is not None and spec.kind != "sparse"
    if spec.kind == "multi":
        datatype = MULTI_DATATYPES[settings.multivector_datatype]
        return models.VectorParams(
            size=spec.size,
            distance=multi_distance(datatype),
            multivector_config=MAXSIM,
            hnsw_config=None if settings.multivector_hnsw else NO_HNSW,
            on_disk=settings.multivector_on_disk or None,
            datatype=datatype,
        )
    return models.VectorParams(
        size=spec.size,
        distance=DISTANCE,
        on_disk=settings.dense_on_disk or None,
        quantization_config=INT8 if settings.dense_quantization == "int8" else None,
    )


def multi_distance(datatype: models.Datatype | None) -> models.Distance:
    """The distance of a multi-vector stored as ``datatype``."""
    return UINT8_MULTI_DISTANCE if datatype == models.Datatype.UINT8 else DISTANCE


def vectors_config(schema: CollectionSchema) -> dict[str, models.VectorParams]:
    return {v.name: vector_params(v, schema.settings) for v in schema.vectors if v.kind != "sparse"}


def sparse_vectors_config(schema: CollectionSchema) -> dict[str, models.SparseVectorParams]:
    names = [v.name for v in schema.vectors if v.kind == "sparse"]
    return {name: models.SparseVectorParams(modifier=None) for name in names}


def server_options(settings: CollectionSettings) -> dict[str, Any]:
    """``create_collection`` keyword arguments that only a server has (the ones set)."""
    return {k: v for k in SERVER_INTS if (v := getattr(settings, k)) is not None}
