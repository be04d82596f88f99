"""A Qdrant server over gRPC: the production store (``--qdrant-url``).

Everything but the upserts, the lookups by id without vectors and the alias list goes through
qdrant-client's gRPC client, as :class:`ClientStore` makes it. Those lookups (every job makes
two or three) and the alias list (one a job) are the generated protobuf messages, sent on this
store's own channel (``sinks/proto/get.py``, ``sinks/proto/aliases.py``).
Upserts, nearly all of the bytes, skip it: ``sinks/proto/upsert.py`` writes the
``UpsertPoints`` request straight from the points' arrays, and it is sent as those bytes on a
channel of this store's own (no pydantic model per point, no Python float per element; see
``sinks/proto``). Each upsert carries ``wait = true``: the server answers once the points are
applied (in its WAL), and only that answer, with status ``Completed``, makes the call return.
Several upserts may be in flight at once, from the writer's threads (``write_concurrency``,
``sinks/owner.py``): the channel is thread-safe and HTTP/2 carries them side by side.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from qdrant_client import QdrantClient, models
from qdrant_client.grpc import collections_pb2, points_pb2

from poolq.sinks.points import PointRecord
from poolq.sinks.proto.aliases import LIST_ALIASES_METHOD, LIST_ALIASES_REQUEST, alias_map
from poolq.sinks.proto.get import GET_METHOD, get_request, records
from poolq.sinks.proto.upsert import upsert_request
from poolq.sinks.store.client import ClientStore, forbidden
from poolq.sinks.store.server_target import ServerTarget

UPSERT_METHOD = "/qdrant.Points/Upsert"
DEFAULT_WRITES_IN_FLIGHT = 4
GET_TIMEOUT_S = 60.0  # a lookup of a job's ids
UPSERT_TIMEOUT_S = 300.0  # one batch (6 MB at 128 points of 92 x 128 rows) on a busy server
_COMPLETED = points_pb2.UpdateStatus.Completed
_CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
    ("grpc.primary_user_agent", "poolq"),
]


class UpsertNotCompletedError(RuntimeError):
    """The server answered an upsert with ``wait = true`` neither ``Completed`` nor
    ``WaitTimeout`` (which is a :class:`TimeoutError`: transient, the writer retries)."""


class GrpcStore(ClientStore):
    """See the module docstring. ``writes_in_flight``: upserts the writer may have outstanding
    at once (each blocking one of its threads until the server acknowledged it)."""

    def __init__(
        self,
        target: ServerTarget,
        api_key: str | None = None,
        *,
        writes_in_flight: int = DEFAULT_WRITES_IN_FLIGHT,
    ) -> None:
        if isinstance(writes_in_flight, bool) or not isinstance(writes_in_flight, int):
            raise ValueError(f"writes_in_flight: expected an integer, got {writes_in_flight!r}")
        if writes_in_flight < 1:
            raise ValueError(f"writes_in_flight: expected >= 1, got {writes_in_flight}")
        client = QdrantClient(
            host=target.host,
            port=target.rest_port or 6333,
            grpc_port=target.grpc_port,
            prefer_grpc=True,
            https=target.tls,
            api_key=api_key,
            # it would ask the REST port for the version; a grpc:// URL names none
            check_compatibility=target.rest_port is not None,
        )
        super().__init__(client, description=f"url={target.shown!r}")
        self.write_concurrency = writes_in_flight
        address = f"{target.host}:{target.grpc_port}"
        self._channel = (
            grpc.secure_channel(address, grpc.ssl_channel_credentials(), _CHANNEL_OPTIONS)
            if target.tls
            else grpc.insecure_channel(address, _CHANNEL_OPTIONS)
        )
        self._metadata = (("api-key", api_key),) if api_key else None
        # the request is bytes already: no serializer
        self._upsert = self._channel.unary_unary(
            UPSERT_METHOD,
            request_serializer=None,
            response_deserializer=points_pb2.PointsOperationResponse.FromString,
        )
        # lookups by id without vectors (sinks/proto/get.py): bytes in, bytes out
        self._get = self._channel.unary_unary(
            GET_METHOD, request_serializer=None, response_deserializer=None
        )
        self._list_aliases = self._channel.unary_unary(
            LIST_ALIASES_METHOD,
            request_serializer=None,
            response_deserializer=collections_pb2.ListAliasesResponse.FromString,
        )

    def aliases(self) -> dict[str, str]:
        """Every alias and its collection, from protobuf (``sinks/proto/aliases.py``); a key
        scoped to collections may not list them: then none (the server resolves)."""
        try:
            found = self._list_aliases(
                LIST_ALIASES_REQUEST, timeout=GET_TIMEOUT_S, metadata=self._metadata
            )
        except grpc.RpcError as e:
            if forbidden(e):
                return {}
            raise
        return alias_map(found)

    def upsert_records(self, collection: str, records: Sequence[PointRecord]) -> None:
        request = upsert_request(collection, records, self._uint8_of(collection))
        response = self._upsert(request, timeout=UPSERT_TIMEOUT_S, metadata=self._metadata)
        status = response.result.status
        if status != _COMPLETED:
            name = points_pb2.UpdateStatus.Name(status)
            what = f"upsert of {len(records)} points into {collection!r}"
            if status == points_pb2.UpdateStatus.WaitTimeout:
                raise TimeoutError(f"{what}: the server timed out waiting for it to apply")
            raise UpsertNotCompletedError(f"{what}: the server answered {name}, expected Completed")

    def retrieve(
        self,
        collection: str,
        ids: Sequence[str],
        *,
        with_payload: bool | Sequence[str] = True,
        with_vectors: bool | Sequence[str] = False,
    ) -> list[models.Record]:
        """Points by id; without vectors, straight from protobuf (``sinks/proto/get.py``)."""
        if with_vectors:
            return super().retrieve(
                collection, ids, with_payload=with_payload, with_vectors=with_vectors
            )
        if not ids:
            return []
        request = get_request(collection, ids, with_payload)
        return records(self._get(request, timeout=GET_TIMEOUT_S, metadata=self._metadata))

    def close(self) -> None:
        try:
            self._channel.close()
        finally:
            super().close()
