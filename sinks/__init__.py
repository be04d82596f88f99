"""The Qdrant sink: collection schemas, point records and the single-owner writer."""

from sinks.points import POOLQ_NAMESPACE, PointRecord, SparseValues, point_id, to_point_struct
from sinks.schema import CollectionSchema, SchemaMismatchError, VectorSpec, ensure_collection
from sinks.writer import QdrantWriter, SinkUnavailableError

__all__ = [
    "POOLQ_NAMESPACE",
    "CollectionSchema",
    "PointRecord",
    "QdrantWriter",
    "SchemaMismatchError",
    "SinkUnavailableError",
    "SparseValues",
    "VectorSpec",
    "ensure_collection",
    "point_id",
    "to_point_struct",
]
