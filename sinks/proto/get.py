"""``Get`` (points by id, payload only) as protobuf, for the server store's lookups.

The worker looks points up by id at every job (the unchanged-document check reads chunk 0 of
each document, then probes the last chunk; the stale-chunk probe after a write). Instead of
qdrant-client's pydantic models for the request and every point found, the request is the
generated ``GetPoints`` message and each point found becomes a ``models.Record`` built without
validation, its payload converted straight from the protobuf ``Value``s. Vectors are not asked
for: a lookup with vectors goes through qdrant-client (``ClientStore.retrieve``), which decodes
uint8 codes too. ``tests/sinks/test_proto_get.py`` checks that both give equal records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from qdrant_client import grpc as qgrpc
from qdrant_client import models

GET_METHOD = "/qdrant.Points/Get"


def get_request(collection: str, ids: Sequence[Any], with_payload: bool | Sequence[str]) -> bytes:
    """The serialized ``GetPoints`` of ``ids`` in ``collection``: payload (all of it, or the
    named fields), no vectors."""
    if isinstance(with_payload, bool):
        payload = qgrpc.WithPayloadSelector(enable=with_payload)
    else:
        payload = qgrpc.WithPayloadSelector(
            include=qgrpc.PayloadIncludeSelector(fields=list(with_payload))
        )
    return qgrpc.GetPoints(
        collection_name=collection,
        ids=[_grpc_point_id(i) for i in ids],
        with_payload=payload,
        with_vectors=qgrpc.WithVectorsSelector(enable=False),
    ).SerializeToString()


def records(response: bytes) -> list[models.Record]:
    """The points of a serialized ``GetResponse``, as qdrant-client's records (no vectors)."""
    found = qgrpc.GetResponse.FromString(response).result
    return [
        models.Record.model_construct(
            id=_id_value(p.id),
            payload={k: value(v) for k, v in p.payload.items()},
            vector=None,
            shard_key=None,
            order_value=None,
        )
        for p in found
    ]


def _grpc_point_id(pid: Any) -> qgrpc.PointId:
    if type(pid) is int:
        return qgrpc.PointId(num=pid)
    if isinstance(pid, str):
        return qgrpc.PointId(uuid=pid)
    raise TypeError(f"point id: expected a UUID string or an integer >= 0, got {pid!r}")


def _id_value(pid: qgrpc.PointId) -> int | str:
    return pid.num if pid.WhichOneof("point_id_options") == "num" else pid.uuid


def value(v: qgrpc.Value) -> Any:
    """A payload ``Value`` as JSON-like Python (as qdrant-client's ``value_to_json``)."""
    kind = v.WhichOneof("kind")
    if kind == "string_value":
        return v.string_value
    if kind == "integer_value":
        return v.integer_value
    if kind == "double_value":
        d = v.double_value
        if math.isfinite(d):
            return d
        return "NaN" if math.isnan(d) else ("Infinity" if d > 0 else "-Infinity")  # as JSON has
    if kind == "bool_value":
        return v.bool_value
    if kind == "struct_value":
        return {k: value(x) for k, x in v.struct_value.fields.items()}
    if kind == "list_value":
        return [value(x) for x in v.list_value.values]
    return None  # null_value (or unset)
